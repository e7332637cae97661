/**
 * The in-process `write-tree` of the diff capture: for every index git writes in the capture's
 * way (`git add` over a checkout whose index has a cache tree), the same tree id as
 * `git write-tree`, and objects git reads back; null (git asked instead) for every index it
 * cannot vouch for.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeIndexTree } from '../../../src/workers/verification/index-tree.js';
import { git, makeRepo } from '../../support/git-repo.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

/** A checkout of `files` whose index has a cache tree (`read-tree` primes it, as uh's checkout does). */
function checkout(files: Record<string, string>): string {
  const repo = makeRepo(files);
  dirs.push(repo);
  git(repo, 'read-tree', 'HEAD');
  return repo;
}

function put(repo: string, path: string, content: string): void {
  mkdirSync(dirname(join(repo, path)), { recursive: true });
  writeFileSync(join(repo, path), content);
}

/** Ours on a copy of the index into a fresh object store, then git's on the same index. */
function bothTrees(repo: string): { ours: string | null; gits: string; objects: string } {
  const objects = tempDir('uh-index-tree-objects-');
  dirs.push(objects);
  const index = join(objects, 'index.copy');
  copyFileSync(join(repo, '.git/index'), index);
  const ours = writeIndexTree(index, objects, 20);
  return { ours, gits: git(repo, 'write-tree'), objects };
}

/** A deterministic pseudo-random tree: nested dirs, names git sorts apart from byte order by a hair. */
function generated(seed: number): Record<string, string> {
  let state = seed;
  const next = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  const names = ['a', 'a-b', 'a.b', 'a0', 'ab', 'B', 'z', 'é', 'sp ace', 'x_y'];
  const files: Record<string, string> = {};
  for (let i = 0; i < 40; i++) {
    const depth = next(4);
    const parts = Array.from({ length: depth + 1 }, () => names[next(names.length)]!);
    const path = parts.join('/');
    // A name used as both file and directory cannot be committed: keep the first.
    if (Object.keys(files).some((p) => p.startsWith(`${path}/`) || path.startsWith(`${p}/`))) continue;
    files[path] = `content ${i} ${next(1000)}\n`;
  }
  return files;
}

describe('writeIndexTree', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('tree %i: the id git write-tree gives, after adds, edits and deletions', (seed) => {
    const files = generated(seed);
    const repo = checkout(files);
    const paths = Object.keys(files);
    put(repo, `${paths[0]}.new`, 'added\n');
    put(repo, 'new-dir/deep/file.txt', 'added deep\n');
    writeFileSync(join(repo, paths[1]!), 'edited\n');
    rmSync(join(repo, paths[2]!));
    git(repo, 'add', '--all');
    const { ours, gits } = bothTrees(repo);
    expect(ours).toBe(gits);
  });

  it('modes: an executable, a symlink, a gitlink and a file replaced by a directory', () => {
    const repo = checkout({ 'bin/run': 'echo\n', 'lib/x.txt': 'x\n', f: 'file\n' });
    chmodSync(join(repo, 'bin/run'), 0o755);
    symlinkSync('../lib/x.txt', join(repo, 'bin/link'));
    rmSync(join(repo, 'f'));
    put(repo, 'f/inside.txt', 'now a dir\n');
    git(repo, 'add', '--all');
    const head = git(repo, 'rev-parse', 'HEAD');
    git(repo, 'update-index', '--add', '--cacheinfo', `160000,${head},vendor/sub`);
    const { ours, gits, objects } = bothTrees(repo);
    expect(ours).toBe(gits);
    // The objects written are ones git reads: the same listing as git's own tree.
    const listing = (tree: string, env: Record<string, string> = {}) =>
      execFileSync('git', ['ls-tree', '-r', '-t', tree], {
        cwd: repo,
        encoding: 'utf8',
        env: { ...process.env, ...env },
      });
    expect(
      listing(ours!, { GIT_OBJECT_DIRECTORY: objects, GIT_ALTERNATE_OBJECT_DIRECTORIES: join(repo, '.git/objects') }),
    ).toBe(listing(gits));
    expect(listing(gits)).toContain('120000 blob');
    expect(listing(gits)).toContain('100755 blob');
    expect(listing(gits)).toContain('160000 commit');
  });

  it('an empty index: the empty tree', () => {
    const repo = checkout({ 'only.txt': 'x\n' });
    git(repo, 'rm', '-q', '--cached', 'only.txt');
    const { ours, gits } = bothTrees(repo);
    expect(ours).toBe(gits);
    expect(ours).toBe('4b825dc642cb6eb9a060e54bf8d69288fbee4904');
  });

  it('a subtree the cache tree holds as valid is taken as it is; every changed one is built', () => {
    const repo = checkout({ 'kept/a.txt': 'a\n', 'kept/b/c.txt': 'c\n', 'changed/d.txt': 'd\n' });
    put(repo, 'changed/e.txt', 'e\n');
    // Staged as the capture stages: the listed paths only (`add --all` of everything invalidates every directory).
    execFileSync('git', ['add', '--all', '--force', '--pathspec-from-file=-', '--pathspec-file-nul'], {
      cwd: repo,
      input: 'changed/e.txt\0',
    });
    const { ours, gits, objects } = bothTrees(repo);
    expect(ours).toBe(gits);
    // Written: the root and changed/ only; kept/ came from the cache tree.
    const written = execFileSync('find', [objects, '-type', 'f', '-path', '*/??/*'], { encoding: 'utf8' })
      .trim()
      .split('\n');
    expect(written).toHaveLength(2);
  });

  it.each([
    [
      'intent to add (extended flags)',
      (repo: string) => {
        put(repo, 'later.txt', 'x\n');
        git(repo, 'add', '--intent-to-add', 'later.txt');
      },
    ],
    ['index version 4', (repo: string) => git(repo, 'update-index', '--index-version', '4')],
    [
      'an unmerged entry',
      (repo: string) => {
        const blob = git(repo, 'rev-parse', 'HEAD:README.md');
        execFileSync('git', ['update-index', '--index-info'], { cwd: repo, input: `100644 ${blob} 1\tconflict.txt\n` });
      },
    ],
    ['a split index', (repo: string) => git(repo, 'update-index', '--split-index')],
  ])('%s: null, git is asked instead', (_name, change) => {
    const repo = checkout({ 'README.md': '# one\n' });
    change(repo);
    const index = join(repo, '.git/index');
    expect(writeIndexTree(index, tempDir('uh-index-tree-odd-'), 20)).toBeNull();
  });

  it('a checksum that does not match, or no index at all: null', () => {
    const repo = checkout({ 'README.md': '# one\n' });
    const index = join(repo, '.git/index');
    const bytes = readFileSync(index);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
    writeFileSync(index, bytes);
    expect(writeIndexTree(index, tempDir('uh-index-tree-sum-'), 20)).toBeNull();
    expect(writeIndexTree(join(repo, 'absent'), tempDir('uh-index-tree-none-'), 20)).toBeNull();
  });

  it('a SHA-256 repository', () => {
    const repo = tempDir('uh-index-tree-256-');
    dirs.push(repo);
    git(repo, 'init', '-q', '--object-format=sha256');
    put(repo, 'dir/a.txt', 'a\n');
    put(repo, 'b.txt', 'b\n');
    git(repo, 'add', '--all');
    const objects = tempDir('uh-index-tree-objects-');
    dirs.push(objects);
    expect(writeIndexTree(join(repo, '.git/index'), objects, 32)).toBe(git(repo, 'write-tree'));
  });
});
