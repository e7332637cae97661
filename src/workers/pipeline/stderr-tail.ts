/**
 * The reason in the why line: when a runtime did not complete, its outcome message (the CLI's
 * `why:`, the receipt) ends with the last lines of what its program wrote on stderr, bounded and
 * scrubbed of the run's secrets, unless the message already says them. bubblewrap's own
 * `bwrap: execvp <program>: No such file or directory` (a program the sandbox cannot see) is the
 * same as a program that is not installed: blocked `spawn:ENOENT` with the fix. On an overlay
 * sandbox, what the program wrote about what that backend does differently gets a hint
 * (`withOverlayHint`, docs/sandboxes.md).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { Outcome } from '../../shared/contracts/runtime-result.js';
import { redactString } from '../../shared/redact.js';

/** At most this many lines, each at most LINE_CHARS, read from the last TAIL_BYTES of the file. */
const TAIL_LINES = 3;
const LINE_CHARS = 200;
const TAIL_BYTES = 8192;

/** The last non-empty lines of `file` (empty when it is missing or empty), secrets scrubbed. */
export function stderrTailLines(file: string, secrets: readonly string[]): string[] {
  let text: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, TAIL_BYTES);
      const buf = Buffer.alloc(length);
      readSync(fd, buf, 0, length, size - length);
      text = buf.toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return [];
  }
  const lines = redactString(text, secrets)
    .replace(KEY_SHAPES, (_m, _key, bearer) => `${bearer ?? ''}[redacted]`)
    .split('\n')
    // eslint-disable-next-line no-control-regex -- control characters in a terminal line become spaces
    .map((l) => l.replace(/[\u0000-\u001f\u007f]/g, ' ').trim())
    .filter((l) => l !== '' && !l.startsWith('[uh: log capped'));
  return lines.slice(-TAIL_LINES).map((l) => (l.length > LINE_CHARS ? `${l.slice(0, LINE_CHARS)}…` : l));
}

/** Key-shaped strings scrubbed even when the run does not know the secret itself. */
const KEY_SHAPES =
  /\b(sk-[A-Za-z0-9_-]{8,}|AIza[0-9A-Za-z_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,})|(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/g;

const EXECVP = /^bwrap: execvp (.+): No such file or directory$/;

/** The outcome with the stderr tail in its message (and bwrap's execvp failure as a missing program). */
export function withStderrTail(outcome: Outcome, lines: readonly string[]): Outcome {
  if (outcome.status === 'completed' || outcome.status === 'cancelled' || lines.length === 0) return outcome;
  const execvp = lines.map((l) => EXECVP.exec(l)).find((m) => m !== null);
  if (execvp && outcome.status === 'failed') {
    return {
      ...outcome,
      status: 'blocked',
      raw: 'spawn:ENOENT',
      message: `program not found inside the sandbox: ${execvp[1]}`,
      hint: `install ${execvp[1]} where the sandbox can see it (on PATH, outside /tmp), name it by its full path, or add its directory to UH_ISOLATION_READABLE`,
    };
  }
  const fresh = lines.filter((l) => !outcome.message.includes(l));
  if (fresh.length === 0) return outcome;
  return { ...outcome, message: `${outcome.message} (stderr: ${fresh.join(' | ')})` };
}

/** What a program writes when it meets what an overlay sandbox does differently, and the fix. */
const OVERLAY_HINTS: ReadonlyArray<{ says: RegExp; hint: string }> = [
  {
    says: /Invalid cross-device link|\bEXDEV\b/,
    hint: 'an overlay sandbox cannot rename a directory of the base in place (EXDEV: `git mv` of a directory fails, `mv` copies); run this mission with UH_SANDBOX_BACKEND=worktree (docs/sandboxes.md)',
  },
];

/** A failed run on an overlay sandbox whose message or stderr tail says why, with the fix as its hint. Pure. */
export function withOverlayHint(outcome: Outcome, lines: readonly string[]): Outcome {
  if (outcome.status !== 'failed' || outcome.hint) return outcome;
  const said = [outcome.message, ...lines].join('\n');
  const found = OVERLAY_HINTS.find((h) => h.says.test(said));
  return found ? { ...outcome, hint: found.hint } : outcome;
}
