/** The why line's stderr tail (stderr-tail.ts): bounded, scrubbed, never repeated, bwrap's execvp read as a missing program. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Outcome } from '../../../src/shared/contracts/runtime-result.js';
import { stderrTailLines, withOverlayHint, withStderrTail } from '../../../src/workers/pipeline/stderr-tail.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dir = tempDir('uh-stderr-tail-');
afterAll(() => removeDir(dir));

const failed: Outcome = {
  status: 'failed',
  raw: 'exit:1',
  message: 'command exited 1',
  timed_out: false,
  exit_code: 1,
};

describe('stderr tail in the why line', () => {
  it('keeps the last three non-empty lines, each capped, secrets and key shapes scrubbed', () => {
    const file = join(dir, 'a.log');
    writeFileSync(file, `one\ntwo\n\nthree my-secret-value\nfour Bearer abcdefghijkl\n${'x'.repeat(500)}\n\n`);
    const lines = stderrTailLines(file, ['my-secret-value']);
    expect(lines).toEqual(['three [redacted]', 'four Bearer [redacted]', `${'x'.repeat(200)}…`]);
  });

  it('a missing file gives no lines', () => {
    expect(stderrTailLines(join(dir, 'nope.log'), [])).toEqual([]);
  });

  it.each([
    ['appends fresh lines', failed, ['boom'], { message: 'command exited 1 (stderr: boom)' }],
    [
      'skips lines the message already has',
      { ...failed, message: 'agent died: boom' },
      ['boom'],
      { message: 'agent died: boom' },
    ],
    [
      'leaves a completed run alone',
      { ...failed, status: 'completed' as const },
      ['noise'],
      { message: 'command exited 1' },
    ],
    [
      'reads bwrap execvp as a missing program',
      failed,
      ['bwrap: execvp agent: No such file or directory'],
      { status: 'blocked', raw: 'spawn:ENOENT', message: 'program not found inside the sandbox: agent' },
    ],
  ])('%s', (_name, outcome, lines, expected) => {
    expect(withStderrTail(outcome as Outcome, lines)).toMatchObject(expected);
  });
});

describe('the overlay sandbox hint', () => {
  const exdev = "fatal: renaming 'src/old' failed: Invalid cross-device link";
  it.each([
    ['names the worktree backend for a rename refused with EXDEV', failed, [exdev], /UH_SANDBOX_BACKEND=worktree/],
    ['reads the message too', { ...failed, message: `agent: ${exdev}` }, [], /cannot rename a directory of the base/],
    ['leaves other failures alone', failed, ['boom'], undefined],
    ['keeps a hint already given', { ...failed, hint: 'their own' }, [exdev], /^their own$/],
    ['leaves a blocked run alone', { ...failed, status: 'blocked' as const }, [exdev], undefined],
  ])('%s', (_name, outcome, lines, hint) => {
    const got = withOverlayHint(outcome as Outcome, lines);
    if (hint === undefined) expect(got.hint).toBeUndefined();
    else expect(got.hint).toMatch(hint);
  });
});
