/**
 * The diff capture's in-process `git add`: for every plain change, the tree `git add` +
 * `git write-tree` give over the same index and private git dir, with blobs git reads back; and
 * false (git stages instead, the state untouched) for every change that is not plain.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeGitDir } from '../../../src/workers/sandbox/git-dir.js';
import { readIndexState, writeStateTree } from '../../../src/workers/verification/index-tree.js';
import { parseListing } from '../../../src/workers/verification/capture-diff.js';
import { stageInProcess } from '../../../src/workers/verification/stage-in-process.js';
import { git, makeRepo } from '../../support/git-repo.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

interface Sandbox {
  work: string;
  gitDir: string;
  index: string;
  commit: string;
}

/** A checkout of `files` with a private git dir as uh writes it, and uh's index (with its cache tree) beside it. */
function sandbox(files: Record<string, string>): Sandbox {
  const work = makeRepo(files);
  const priv = tempDir('uh-stage-private-');
  dirs.push(work, priv);
  const commit = git(work, 'rev-parse', 'HEAD');
  const gitDir = join(priv, 'git');
  writeGitDir(gitDir, { bare: true, alternates: join(work, '.git/objects'), commit });
  const index = join(priv, 'index');
  privateGit({ work, gitDir, index, commit }, 'read-tree', commit);
  return { work, gitDir, index, commit };
}

function privateGit(box: Sandbox, ...args: string[]): string {
  return execFileSync('git', [`--git-dir=${box.gitDir}`, `--work-tree=${box.work}`, ...args], {
    cwd: box.work,
    encoding: 'utf8',
    env: { ...process.env, GIT_INDEX_FILE: box.index, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' },
  }).trim();
}

function put(box: Sandbox, path: string, content: string): void {
  mkdirSync(dirname(join(box.work, path)), { recursive: true });
  writeFileSync(join(box.work, path), content);
}

/** The listing the capture makes (no ignore rules), then ours on a copy of the index and git's on the index itself. */
function bothWays(box: Sandbox): { staged: boolean; ours: string | null; gits: string } {
  const listed = parseListing(privateGit(box, 'ls-files', '-z', '-t', '--modified', '--deleted', '--others'));
  const copy = `${box.index}.copy`;
  copyFileSync(box.index, copy);
  const state = readIndexState(copy, 20);
  expect(state).not.toBeNull();
  const staged =
    null !== stageInProcess({ state: state!, workDir: box.work, gitDir: box.gitDir, baseCommit: box.commit, listed });
  const ours = staged ? writeStateTree(state!, join(box.gitDir, 'objects')) : null;
  const gone = listed.paths.filter((p) => listed.deleted.includes(p));
  const rest = listed.paths.filter((p) => !listed.deleted.includes(p));
  if (gone.length > 0)
    execFileSync('git', [`--git-dir=${box.gitDir}`, `--work-tree=${box.work}`, 'rm', '--cached', '-q', '--', ...gone], {
      env: { ...process.env, GIT_INDEX_FILE: box.index },
    });
  if (rest.length > 0)
    execFileSync(
      'git',
      [`--git-dir=${box.gitDir}`, `--work-tree=${box.work}`, 'add', '--all', '--force', '--', ...rest],
      { env: { ...process.env, GIT_INDEX_FILE: box.index, GIT_LITERAL_PATHSPECS: '1' } },
    );
  return { staged, ours, gits: privateGit(box, 'write-tree') };
}

describe('stageInProcess', () => {
  it('edits, new files in new directories, deletions, an executable and a symlink: the tree git stages', () => {
    const box = sandbox({
      'README.md': '# one\n',
      'src/a.ts': 'a\n',
      'src/b.ts': 'b\n',
      'src/deep/c.ts': 'c\n',
      'z.txt': 'z\n',
    });
    writeFileSync(join(box.work, 'README.md'), '# two\n');
    rmSync(join(box.work, 'src/b.ts'));
    put(box, 'src/deep/er/d.ts', 'd\n');
    put(box, 'a-b/e.txt', 'e\n');
    put(box, 'run.sh', 'echo\n');
    chmodSync(join(box.work, 'run.sh'), 0o755);
    chmodSync(join(box.work, 'z.txt'), 0o755);
    symlinkSync('/etc/passwd', join(box.work, 'link'));
    const { staged, ours, gits } = bothWays(box);
    expect(staged).toBe(true);
    expect(ours).toBe(gits);
    // A symlink's blob is its target's name, never the file it points at.
    expect(privateGit(box, 'cat-file', '-p', `${ours}:link`)).toBe('/etc/passwd');
    expect(privateGit(box, 'cat-file', '-p', `${ours}:src/deep/er/d.ts`)).toBe('d');
  });

  it('a directory replaced by a file: staged in process, the tree git stages', () => {
    const box = sandbox({ f: 'file\n', 'd/x.txt': 'x\n', 'd/y.txt': 'y\n' });
    rmSync(join(box.work, 'd'), { recursive: true });
    put(box, 'd', 'now a file\n');
    const { staged, ours, gits } = bothWays(box);
    expect(staged).toBe(true);
    expect(ours).toBe(gits);
  });

  it('a file replaced by a directory (listed as a modified path that is now a directory): git stages', () => {
    const box = sandbox({ f: 'file\n', 'k.txt': 'k\n' });
    rmSync(join(box.work, 'f'));
    put(box, 'f/inside.txt', 'now a dir\n');
    const { staged, gits } = bothWays(box);
    expect(staged).toBe(false);
    expect(privateGit(box, 'cat-file', '-p', `${gits}:f/inside.txt`)).toBe('now a dir');
  });

  it('a change that reverts a file to its base content: the base tree', () => {
    const box = sandbox({ 'README.md': '# one\n', 'sub/k.txt': 'k\n' });
    writeFileSync(join(box.work, 'README.md'), '# one\n'); // same bytes, new mtime
    const { staged, ours, gits } = bothWays(box);
    expect(ours === null || ours === gits).toBe(true);
    expect(staged ? ours : gits).toBe(git(box.work, 'rev-parse', 'HEAD^{tree}'));
  });

  it.each([
    [
      'a .gitattributes in the base',
      { '.gitattributes': '* text=auto\n' },
      (box: Sandbox) => put(box, 'new.txt', 'x\r\n'),
    ],
    ['a .gitattributes the agent wrote', {}, (box: Sandbox) => put(box, 'sub/.gitattributes', '* text\n')],
    ['a name starting with .git', {}, (box: Sandbox) => put(box, '.gitmodules', '[submodule "x"]\n')],
    ['a name outside the plain set', {}, (box: Sandbox) => put(box, 'naïve.txt', 'x\n')],
    ['a name ending with a dot', {}, (box: Sandbox) => put(box, 'odd.', 'x\n')],
    ['a file over 1 MiB', {}, (box: Sandbox) => put(box, 'big.bin', 'x'.repeat(1024 * 1024 + 1))],
    [
      'a config the private git dir did not start with',
      {},
      (box: Sandbox) => {
        writeFileSync(join(box.gitDir, 'config'), '[core]\n\tautocrlf = true\n');
        put(box, 'new.txt', 'x\n');
      },
    ],
    [
      'an info/attributes in the private git dir other than the neutral one',
      {},
      (box: Sandbox) => {
        mkdirSync(join(box.gitDir, 'info'), { recursive: true });
        writeFileSync(join(box.gitDir, 'info', 'attributes'), '* text\n');
        put(box, 'new.txt', 'x\n');
      },
    ],
  ])('%s: not plain, git stages, the state untouched', (_name, extra: Record<string, string>, change) => {
    const box = sandbox({ 'README.md': '# one\n', 'sub/k.txt': 'k\n', ...extra });
    change(box);
    const listed = parseListing(privateGit(box, 'ls-files', '-z', '-t', '--modified', '--deleted', '--others'));
    expect(listed.paths.length).toBeGreaterThan(0);
    const state = readIndexState(box.index, 20)!;
    const before = state.entries.map((e) => e.path);
    expect(stageInProcess({ state, workDir: box.work, gitDir: box.gitDir, baseCommit: box.commit, listed })).toBeNull();
    expect(state.entries.map((e) => e.path)).toEqual(before);
  });

  it('a listed path under a symlinked directory, under an unlisted .gitattributes, or gone since the listing: not plain', () => {
    const box = sandbox({ 'README.md': '# one\n', 'real/k.txt': 'k\n' });
    symlinkSync('real', join(box.work, 'alias'));
    // Unlisted (as if the base's rules ignored it), and still read by git add.
    put(box, 'sub/.gitattributes', '* text\n');
    put(box, 'sub/new.txt', 'x\n');
    const state = readIndexState(box.index, 20)!;
    const stage = (paths: string[]) =>
      stageInProcess({
        state,
        workDir: box.work,
        gitDir: box.gitDir,
        baseCommit: box.commit,
        listed: { paths, deleted: [] },
      }) !== null;
    expect(stage(['alias/k.txt'])).toBe(false);
    expect(stage(['sub/new.txt'])).toBe(false);
    expect(stage(['vanished.txt'])).toBe(false);
    expect(stage(['real/k.txt'])).toBe(true);
  });
});
