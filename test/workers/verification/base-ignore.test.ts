/**
 * The base commit's ignore rules, flattened into one exclude file: a pattern keeps the meaning
 * it had in its own `.gitignore` (checked against real git on a real worktree).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { anchorIgnoreFiles, anchorIgnoreLine } from '../../../src/workers/verification/base-ignore.js';
import { git } from '../../support/git-repo.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

describe('anchorIgnoreLine', () => {
  it.each([
    ['', 'node_modules/', 'node_modules/'],
    ['a/b', 'out', '/a/b/**/out'],
    ['a/b', 'out/', '/a/b/**/out/'],
    ['a/b', '/top.txt', '/a/b/top.txt'],
    ['a/b', 'x/y.o', '/a/b/x/y.o'],
    ['a/b', '!keep.o', '!/a/b/**/keep.o'],
    ['a/b', '**/gen', '/a/b/**/gen'],
    ['a', '# comment', null],
    ['a', '   ', null],
    ['a', 'trailing   ', '/a/**/trailing'],
  ])('%s: %s', (dir, line, expected) => {
    expect(anchorIgnoreLine(dir, line)).toBe(expected);
  });
});

describe('anchorIgnoreFiles', () => {
  it('ignores what the per-directory files ignored, and nothing else', () => {
    const files = [
      { path: '.gitignore', text: '*.log\n' },
      { path: 'pkg/.gitignore', text: 'dist/\n!important.log\n/local.txt\n' },
    ];
    const dir = tempDir('uh-ignore-');
    dirs.push(dir);
    git(dir, 'init', '-q');
    const tree = [
      'a.log',
      'pkg/x.log',
      'pkg/important.log',
      'pkg/dist/b.js',
      'pkg/sub/dist/c.js',
      'pkg/local.txt',
      'pkg/sub/local.txt',
      'dist/top.js',
      'src/ok.ts',
    ];
    for (const p of tree) {
      mkdirSync(dirname(join(dir, p)), { recursive: true });
      writeFileSync(join(dir, p), 'x');
    }
    const excludes = join(dir, '..', `${dir.split('/').pop()}.excludes`);
    dirs.push(excludes);
    writeFileSync(excludes, anchorIgnoreFiles(files));
    const listed = git(dir, 'ls-files', '--others', `--exclude-from=${excludes}`).split('\n').sort();
    expect(listed).toEqual(['dist/top.js', 'pkg/important.log', 'pkg/sub/local.txt', 'src/ok.ts']);
  });
});
