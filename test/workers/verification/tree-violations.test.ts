/**
 * The tree walk's rule for names git refuses, checked against git itself (each name staged alone
 * in a scratch repository: `git add` exits 128 for a name `verify_path` refuses), and its bounds.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { refusedByGit, treeViolations, walkTree } from '../../../src/workers/verification/tree-violations.js';
import { removeTree, treeBytes } from '../../../src/shared/fs/deep-tree.js';
import { tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => removeTree(d)));

const DIR_NAMES = [
  '.git.',
  '.git ',
  '.git. .',
  '.git:x',
  'git~1',
  'GIT~1.',
  'git~1:x',
  '.git\\x',
  'a\\.git',
  '.gitx',
  'git~2',
  '.git~1',
  'x.git',
  '.GIT',
  '.Git',
  '.git .x',
  ' .git',
  '.gitmodules',
  'plain',
];
const LINK_NAMES = [
  '.gitmodules',
  '.GITMODULES',
  '.gitmodules.',
  'gitmod~1',
  'gi7eba~1',
  '.gitmodules:x',
  '.gitattributes',
  '.gitignore',
  '.gitmodulesx',
  'link',
];

function gitRefuses(name: string, symlink: boolean): boolean {
  const repo = tempDir('uh-refused-');
  dirs.push(repo);
  execFileSync('git', ['init', '-q', repo]);
  mkdirSync(join(repo, 't'));
  if (symlink) symlinkSync('x', join(repo, 't', name));
  else {
    mkdirSync(join(repo, 't', name));
    writeFileSync(join(repo, 't', name, 'f'), '1\n');
  }
  const path = symlink ? `t/${name}` : `t/${name}/f`;
  const add = spawnSync('git', ['-C', repo, 'add', '--force', '--pathspec-from-file=-', '--pathspec-file-nul'], {
    input: `${path}\0`,
  });
  return add.status !== 0;
}

describe('refusedByGit', () => {
  it.each(DIR_NAMES)('directory %j: as git decides', (name) => {
    expect(refusedByGit(name, false)).toBe(gitRefuses(name, false));
  });
  it.each(LINK_NAMES)('symlink %j: as git decides', (name) => {
    expect(refusedByGit(name, true)).toBe(gitRefuses(name, true));
  });
});

describe('treeViolations', () => {
  it('names the first path past each bound, a refused name and a nested .git, and walks nothing below them', () => {
    const root = tempDir('uh-walk-');
    dirs.push(root);
    mkdirSync(join(root, '.git'));
    mkdirSync(join(root, 'a/b/c/d'), { recursive: true });
    mkdirSync(join(root, 'long', 'x'.repeat(40)), { recursive: true });
    mkdirSync(join(root, 'n/.GIT'), { recursive: true });
    mkdirSync(join(root, 'r/.git'), { recursive: true });
    writeFileSync(join(root, 'ok.txt'), '1\n');
    expect(treeViolations(root, { maxBytes: 30, maxDepth: 3 })).toEqual([
      { path: 'a/b/c/d', reason: 'path_too_deep' },
      { path: `long/${'x'.repeat(40)}`, reason: 'path_too_long' },
      { path: 'n/.GIT', reason: 'name_refused_by_git' },
      { path: 'r/.git', reason: 'nested_repository' },
    ]);
  });
});

describe('walkTree', () => {
  it('lists the empty directories (none of a flagged path), for removal before the checks', () => {
    const root = tempDir('uh-empty-');
    dirs.push(root);
    mkdirSync(join(root, 'e/f'), { recursive: true });
    mkdirSync(join(root, 'g'));
    writeFileSync(join(root, 'g/x'), '1\n');
    mkdirSync(join(root, 'n/.GIT'), { recursive: true });
    expect(walkTree(root).emptyDirs).toEqual(['e/f']);
  });
});

describe('deep trees', () => {
  it('counts and removes a tree deeper than PATH_MAX', () => {
    const root = tempDir('uh-deep-');
    dirs.push(root);
    const name = 'd'.repeat(250);
    // bash's cd works relatively past PATH_MAX; 24 levels of 251 bytes is about 6 KB.
    execFileSync('bash', [
      '-c',
      `cd ${root} && for i in $(seq 24); do mkdir ${name} && cd ${name}; done && printf 12345 > f`,
    ]);
    writeFileSync(join(root, 'top'), 'abc');
    expect(treeBytes(root)).toBe(8);
    expect(removeTree(root)).toBe(true);
  });
});
