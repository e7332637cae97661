/**
 * The base's ignore rules in process (`ignore-rules.ts`) say what git says: for generated rule
 * sets of the subset it takes and generated trees of new files (some under tracked directories),
 * the files it leaves in are exactly `git ls-files --others --exclude-from=<rules>`'s. Lines
 * outside the subset make it refuse (null): git lists then.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compileIgnoreRules } from '../../../src/workers/verification/ignore-rules.js';
import { readIndexEntries } from '../../../src/workers/sandbox/index-file.js';
import { worktreeIgnored } from '../../../src/workers/sandbox/worktree-scrub.js';
import { makeRepo } from '../../support/git-repo.js';
import { removeDir, tempDir } from '../../support/temp.js';
import { seeded } from '../../support/spawned.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const PATTERNS = [
  '*.log',
  'build/',
  '/build',
  'out',
  '/src/gen/',
  'src/*.tmp',
  'docs/**/draft*',
  '**/cache',
  'a?c',
  'tmp/**',
  '/lib/**/x',
  'node_modules/',
  '*.o',
  'keep/',
  '/top*',
  '.env',
  '.cache/',
  '*~',
  'src/**',
  'z*/y',
];
const NAMES = [
  'a.log',
  'abc',
  'axc',
  'build',
  'out',
  'src',
  'gen',
  'x',
  'y',
  'z1',
  'docs',
  'draft1',
  'draft',
  'cache',
  'tmp',
  'lib',
  'deep',
  'node_modules',
  'm.o',
  'keep',
  'top1',
  'topper',
  '.env',
  '.cache',
  'f~',
  'f.tmp',
  'plain.txt',
];

function randomTree(rnd: () => number): string[] {
  const files = new Set<string>();
  const count = 5 + Math.floor(rnd() * 25);
  while (files.size < count) {
    const depth = 1 + Math.floor(rnd() * 4);
    const parts = Array.from({ length: depth }, () => NAMES[Math.floor(rnd() * NAMES.length)]!);
    files.add(parts.join('/'));
  }
  // A file and a directory of one name cannot both be: keep the first that claims the name.
  const kept: string[] = [];
  for (const f of files) if (!kept.some((k) => k.startsWith(`${f}/`) || f.startsWith(`${k}/`))) kept.push(f);
  return kept;
}

/** One generated case: rules of the subset, a repository with tracked files, new files written in it. */
function generatedCase(rnd: () => number): { rules: string; rulesFile: string; repo: string; fresh: string[] } {
  const rules = PATTERNS.filter(() => rnd() < 0.25).join('\n') + '\n';
  const tracked = { 'README.md': '#\n', 'src/keep.ts': 'k\n', 'build/tracked.txt': 't\n', 'docs/guide/a.md': 'a\n' };
  const repo = makeRepo(tracked);
  dirs.push(repo);
  const fresh = randomTree(rnd).filter(
    (f) => !Object.keys(tracked).some((t) => t === f || t.startsWith(`${f}/`) || f.startsWith(`${t}/`)),
  );
  for (const f of fresh) {
    mkdirSync(dirname(join(repo, f)), { recursive: true });
    writeFileSync(join(repo, f), 'x');
  }
  const rulesFile = join(tempDir('uh-ignore-rules-'), 'rules');
  dirs.push(dirname(rulesFile));
  writeFileSync(rulesFile, rules);
  return { rules, rulesFile, repo, fresh };
}

describe('compileIgnoreRules', () => {
  it('leaves in exactly what git ls-files --others --exclude-from lists, over 150 generated cases', () => {
    const rnd = seeded(20261202);
    for (let round = 0; round < 150; round++) {
      const { rules, rulesFile, repo, fresh } = generatedCase(rnd);
      const gits = execFileSync('git', ['ls-files', '-z', '--others', `--exclude-from=${rulesFile}`], {
        cwd: repo,
        env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
      })
        .toString()
        .split('\0')
        .filter(Boolean)
        .sort();
      const ignored = compileIgnoreRules(rules);
      expect(ignored, rules).not.toBeNull();
      const ours = fresh.filter((f) => !ignored!(f, false)).sort();
      expect(ours, `rules:\n${rules}files: ${fresh.join(' ')}`).toEqual(gits);
    }
  });

  it.each([
    ['a negation', '*.log\n!keep.log\n'],
    ['a backslash', '\\#not-a-comment\n'],
    ['a character class', '*.[oa]\n'],
    ['a ** inside a name', 'a**b\n'],
    ['a space', 'my file\n'],
    ['a byte outside ASCII', 'café\n'],
  ])('refuses %s (git lists)', (_name, rules) => {
    expect(compileIgnoreRules(rules)).toBeNull();
  });

  it('an empty rule set ignores nothing; a directory rule matches directories only', () => {
    expect(compileIgnoreRules('')!('anything', false)).toBe(false);
    const test = compileIgnoreRules('out/\n')!;
    expect(test('out', false)).toBe(false);
    expect(test('out', true)).toBe(true);
    expect(test('a/out/file', false)).toBe(true);
  });
});

describe("worktreeIgnored (the agent's ignored files, removed before the checks)", () => {
  it('lists exactly what git ls-files --others --ignored --exclude-from lists, over 100 generated cases', () => {
    const rnd = seeded(20261203);
    for (let round = 0; round < 100; round++) {
      const { rules, rulesFile, repo } = generatedCase(rnd);
      const args = ['ls-files', '-z', '--others', '--ignored', `--exclude-from=${rulesFile}`];
      const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' };
      const gits = execFileSync('git', args, { cwd: repo, env }).toString().split('\0').filter(Boolean).sort();
      const entries = readIndexEntries(join(repo, '.git', 'index'), 20) ?? [];
      const ignored = compileIgnoreRules(rules)!;
      const ours = worktreeIgnored(repo, entries, ignored, { maxEntries: 500, maxVisited: 5000 });
      expect(ours, `rules:\n${rules}`).toEqual(gits);
    }
  });

  it('leaves to git what it cannot be sure of: a nested .git, a name outside ASCII, past its bounds', () => {
    const repo = makeRepo({ 'README.md': '#\n' });
    dirs.push(repo);
    const entries = readIndexEntries(join(repo, '.git', 'index'), 20) ?? [];
    const all = () => true;
    mkdirSync(join(repo, 'build'));
    writeFileSync(join(repo, 'build', 'a.o'), 'x');
    expect(worktreeIgnored(repo, entries, all, { maxEntries: 500, maxVisited: 5000 })).toEqual(['build/a.o']);
    expect(worktreeIgnored(repo, entries, all, { maxEntries: 500, maxVisited: 1 })).toBeNull();
    expect(worktreeIgnored(repo, entries, all, { maxEntries: 0, maxVisited: 5000 })).toBeNull();
    writeFileSync(join(repo, 'build', 'caf\u00e9'), 'x');
    expect(worktreeIgnored(repo, entries, all, { maxEntries: 500, maxVisited: 5000 })).toBeNull();
    removeDir(join(repo, 'build'));
    mkdirSync(join(repo, 'vendor', '.git'), { recursive: true });
    expect(worktreeIgnored(repo, entries, all, { maxEntries: 500, maxVisited: 5000 })).toBeNull();
  });
});
