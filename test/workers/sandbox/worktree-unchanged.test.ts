/**
 * The diff's in-process "nothing changed" answer (`worktreeUnchanged`) says true only where git's
 * own listing would stage nothing new: each way an agent can change a worktree, the sneaky ones
 * included (same size, mtime set back, the x bit, an ignored file, an empty directory), makes it
 * false, and the diff then comes from git and shows the change. Checked against git itself.
 */
import { chmodSync, lstatSync, mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxPaths } from '../../../src/workers/sandbox/worktree.js';
import { readIndexEntries } from '../../../src/workers/sandbox/index-file.js';
import { worktreeUnchanged } from '../../../src/workers/sandbox/worktree-scrub.js';
import { captureDiff } from '../../../src/workers/verification/capture-diff.js';
import { IN_PROCESS_GIT } from '../../../src/workers/git-path.js';
import { freshSandbox } from '../../support/sandbox.js';
import { removeDir } from '../../support/temp.js';
import { gitProcesses } from '../../support/spawned.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
const BOUNDS = { maxEntries: 2_000, maxHashBytes: 4 * 1024 * 1024 };
const FILES = {
  'README.md': '# one\n',
  '.gitignore': '*.log\n',
  'src/app.sh': 'echo app\n',
  'docs/guide.md': 'guide\n',
};

async function sandboxOf(files: Record<string, string>, id: string) {
  const { sandbox, commit, scratch, baseFactsDir, patch } = await freshSandbox(files, id, dirs, 'uh-unchanged-');
  const paths = sandboxPaths(sandbox.path);
  const check = (bounds = BOUNDS) =>
    worktreeUnchanged(sandbox.path, paths.index, readIndexEntries(paths.index, 20) ?? [], 'sha1', bounds);
  const diff = () => captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
  // Every entry as new as the index or newer (racy), as a checkout within the index's clock tick
  // leaves them: stat data proves nothing then, the content must.
  const makeRacy = () => utimesSync(paths.index, new Date('2001-01-01'), new Date('2001-01-01'));
  return { root: sandbox.path, index: paths.index, check, diff, makeRacy };
}

/** Rewrite a file with new content of the same size and put its mtime back: only ctime (and the bytes) tell. */
function sameSizeSameMtime(path: string, content: string): void {
  const { atime, mtime } = lstatSync(path);
  writeFileSync(path, content);
  utimesSync(path, atime, mtime);
}

describe('worktreeUnchanged', () => {
  it('a worktree exactly as checked out: true, and the diff runs no git process at all', async () => {
    const s = await sandboxOf(FILES, 'op-unch-clean');
    await s.diff(); // the base facts, cached
    expect(s.check()).toBe(true);
    s.makeRacy(); // proven by content now
    expect(s.check()).toBe(true);
    const before = gitProcesses();
    expect(await s.diff()).toMatchObject({ changed: [], bytes: 0 });
    expect(gitProcesses() - before).toBe(0);
  });

  it.each<[string, (root: string) => void, Array<{ path: string; status: string }>]>([
    [
      'a same-size edit with its mtime set back',
      (r) => sameSizeSameMtime(join(r, 'README.md'), '# two\n'),
      [{ path: 'README.md', status: 'modified' }],
    ],
    [
      'the x bit set',
      (r) => chmodSync(join(r, 'docs/guide.md'), 0o755),
      [{ path: 'docs/guide.md', status: 'modified' }],
    ],
    ['a file the base ignores', (r) => writeFileSync(join(r, 'x.log'), 'ignored\n'), []],
    ['an empty new directory', (r) => mkdirSync(join(r, 'empty')), []],
    ['a tracked file deleted', (r) => rmSync(join(r, 'src/app.sh')), [{ path: 'src/app.sh', status: 'deleted' }]],
    [
      'a tracked file replaced by a symlink to itself',
      (r) => {
        rmSync(join(r, 'README.md'));
        symlinkSync('README.md', join(r, 'README.md'));
      },
      [{ path: 'README.md', status: 'type_changed' }],
    ],
    [
      'a tracked directory replaced by a file',
      (r) => {
        rmSync(join(r, 'docs'), { recursive: true });
        writeFileSync(join(r, 'docs'), 'x\n');
      },
      [
        { path: 'docs', status: 'added' },
        { path: 'docs/guide.md', status: 'deleted' },
      ],
    ],
    ['a .git inside a directory', (r) => writeFileSync(join(r, 'src/.git'), 'gitdir: /elsewhere\n'), []],
  ])('%s: false, and git lists what changed', async (_name, change, expected) => {
    const s = await sandboxOf(FILES, `op-unch-${expected.length}-${Math.random().toString(16).slice(2, 8)}`);
    change(s.root);
    expect(s.check()).toBe(false);
    expect((await s.diff()).changed).toEqual(expected);
  });

  it('past its bounds (more tracked paths, or more bytes to hash than allowed): false, git answers', async () => {
    const s = await sandboxOf(FILES, 'op-unch-bounds');
    expect(s.check({ maxEntries: 3, maxHashBytes: BOUNDS.maxHashBytes })).toBe(false);
    // The diff's reader refuses a larger index by its header, before decoding an entry.
    expect(readIndexEntries(s.index, 20, 3)).toBeNull();
    expect(readIndexEntries(s.index, 20, 4)).toHaveLength(4);
    s.makeRacy(); // each entry is hashed then, within the budget only
    expect(s.check({ maxEntries: 100, maxHashBytes: 1 })).toBe(false);
    expect(s.check()).toBe(true);
  });

  it('a tracked .gitattributes: racy entries are not hashed in process (a filter could convert them)', async () => {
    const s = await sandboxOf({ ...FILES, '.gitattributes': '*.md text eol=crlf\n' }, 'op-unch-attrs');
    s.makeRacy();
    expect(s.check()).toBe(false);
    expect((await s.diff()).changed).toEqual([]);
  });
});
