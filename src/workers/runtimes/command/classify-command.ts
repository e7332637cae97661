import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import { classifyProcessEnd, type ProcessEndFacts } from '../../../shared/runtime/classify-process.js';

export interface CommandExit extends ProcessEndFacts {
  program: string;
}

/**
 * The `command` runtime's outcome, in fixed priority: could not start → timeout → cancel →
 * signal → exit code. Pure.
 */
export function classifyCommand(exit: CommandExit): Outcome {
  const base = { exit_code: exit.exitCode, signal: exit.signal };
  const early = classifyProcessEnd(exit, {
    program: exit.program,
    notFound: 'program not found',
    installHint: `install ${exit.program} or fix runtime_config.argv[0] (uh adapter check command)`,
  });
  if (early) return early;
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
    return {
      status: 'failed',
      raw: `signal:${exit.signal}`,
      message: `killed by ${exit.signal}`,
      timed_out: false,
      ...base,
    };
  }
  if (exit.exitCode === 0) {
    return { status: 'completed', raw: 'exit:0', message: 'command exited 0', timed_out: false, ...base };
  }
  return {
    status: 'failed',
    raw: `exit:${exit.exitCode}`,
    message: `command exited ${exit.exitCode}`,
    timed_out: false,
    ...base,
  };
}
