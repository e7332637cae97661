import type { Outcome } from '../contracts/runtime-result.js';
import type { AbortReasonV1 } from './v1/runtime-context.js';

/** How a runtime's child process ended, as every spawn adapter gathers it. */
export interface ProcessEndFacts {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Set when the run's signal was aborted (cancel or mission timeout). */
  abort: AbortReasonV1 | null;
  spawnError?: { code: string; message: string };
}

export interface ProcessWording {
  /** The program as configured (`codex`, `/opt/bin/pi`). */
  program: string;
  /** `codex binary not found: …` vs `program not found: …`. */
  notFound: string;
  /** The operator's next step when the program is missing. */
  installHint: string;
  /** Appended to the timeout message (the runtime's last error, say). */
  timeoutDetail?: string;
}

/**
 * The first rows every spawn runtime's classification shares, in fixed priority: could not start
 * (blocked) → timeout (failed, timed_out) → cancel (cancelled). Null when none applies and the
 * runtime's own rows decide. Pure.
 */
export function classifyProcessEnd(f: ProcessEndFacts, w: ProcessWording): Outcome | null {
  const base = { exit_code: f.exitCode, signal: f.signal };
  if (f.spawnError) {
    const missing = f.spawnError.code === 'ENOENT';
    return {
      status: 'blocked',
      raw: `spawn:${f.spawnError.code}`,
      message: missing ? `${w.notFound}: ${w.program}` : `cannot start ${w.program}: ${f.spawnError.message}`,
      hint: missing ? w.installHint : `check the permissions of ${w.program}`,
      timed_out: false,
      ...base,
    };
  }
  if (f.timedOut || f.abort?.kind === 'timeout') {
    const message = `${f.abort?.message ?? `${w.program} timed out`}${w.timeoutDetail ?? ''}`;
    return { status: 'failed', raw: 'timeout', message, timed_out: true, ...base };
  }
  if (f.abort?.kind === 'cancel') {
    return { status: 'cancelled', raw: 'cancel', message: f.abort.message, timed_out: false, ...base };
  }
  return null;
}

/** The first non-empty line of a runtime's message, capped for receipts. */
export function firstLine(text: string, max = 300): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  return line.length > max ? `${line.slice(0, max)}…` : line;
}
