import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import type { AbortReasonV1 } from '../../../shared/runtime/v1/runtime-context.js';

export interface CommandExit {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Set when the run's signal was aborted (cancel or mission timeout). */
  abort: AbortReasonV1 | null;
  spawnError?: { code: string; message: string };
  program: string;
}

/**
 * The `command` runtime's outcome, in fixed priority: could not start → timeout → cancel →
 * signal → exit code. Pure.
 */
export function classifyCommand(exit: CommandExit): Outcome {
  const base = { exit_code: exit.exitCode, signal: exit.signal };
  if (exit.spawnError) {
    const missing = exit.spawnError.code === 'ENOENT';
    return {
      status: 'blocked',
      raw: `spawn:${exit.spawnError.code}`,
      message: missing ? `program not found: ${exit.program}` : `cannot start ${exit.program}: ${exit.spawnError.message}`,
      hint: missing
        ? `install ${exit.program} or fix runtime_config.argv[0] (uh adapter check command)`
        : `check the permissions of ${exit.program}`,
      timed_out: false,
      ...base,
    };
  }
  if (exit.timedOut || exit.abort?.kind === 'timeout') {
    return { status: 'failed', raw: 'timeout', message: exit.abort?.message ?? 'runtime timed out', timed_out: true, ...base };
  }
  if (exit.abort?.kind === 'cancel') {
    return { status: 'cancelled', raw: 'cancel', message: exit.abort.message, timed_out: false, ...base };
  }
  if (exit.exitCode === 127) {
    return {
      status: 'blocked',
      raw: 'exit:127',
      message: 'command not found (exit 127)',
      hint: 'a program the command runs is missing on this worker',
      timed_out: false,
      ...base,
    };
  }
  if (exit.signal !== null) {
    return { status: 'failed', raw: `signal:${exit.signal}`, message: `killed by ${exit.signal}`, timed_out: false, ...base };
  }
  if (exit.exitCode === 0) {
    return { status: 'completed', raw: 'exit:0', message: 'command exited 0', timed_out: false, ...base };
  }
  return { status: 'failed', raw: `exit:${exit.exitCode}`, message: `command exited ${exit.exitCode}`, timed_out: false, ...base };
}
