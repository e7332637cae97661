/**
 * A change that only adds text files: listed without git under the base's ignore rules
 * (`worktreeAdditions`, `ignore-rules.ts`), staged in process, and its patch written in process
 * (`added-patch.ts`). The listing must be git's `ls-files --others --exclude-from` of the rules.
 * The patch must be git's, byte for byte: each case is checked against git's own staging (its
 * tree must be the one the capture named) and `git diff-tree`, and applied with `git apply` to a
 * clone of the base, where it must give that tree again. No object is written for it. Anything else (binary content, a symlink, a modified file) goes to git as before.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxPaths } from '../../../src/workers/sandbox/worktree.js';
import { readIndexEntries } from '../../../src/workers/sandbox/index-file.js';
import { worktreeAdditions } from '../../../src/workers/sandbox/worktree-scrub.js';
import { captureDiff } from '../../../src/workers/verification/capture-diff.js';
import { IN_PROCESS_GIT } from '../../../src/workers/git-path.js';
import { plainComponent } from '../../../src/workers/verification/stage-in-process.js';
import { spawnCounts } from '../../../src/shared/process/spawn-group.js';
import { freshSandbox } from '../../support/sandbox.js';
import { removeDir, tempDir } from '../../support/temp.js';
import { gitProcesses, seeded } from '../../support/spawned.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
const git = (args: string[], cwd?: string) =>
  execFileSync('git', args, {
    cwd,
    env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' },
    maxBuffer: 64 * 1024 * 1024,
    stdio: 'pipe',
  });

const PIECES = [
  'a',
  'line',
  ' ',
  '\t',
  '\n',
  '\n',
  '\r\n',
  'é',
  '日本',
  '+',
  '-',
  '@@ -1 +1 @@',
  '\\ No newline',
  'diff --git',
  '\u00ff',
];

/** Random new text files: empty ones, ones with and without a final newline, blank lines, CRLF, UTF-8, the x bit. */
function randomFiles(seed: number): Array<{ path: string; content: string; exec: boolean }> {
  const rnd = seeded(seed);
  const names = ['a.txt', 'b', 'src/new.ts', 'src/deep/x.md', 'z-last', 'A.txt', 'a-b', 'a.b/c', 'docs2/n'];
  const count = 1 + Math.floor(rnd() * 5);
  const chosen = new Set<string>();
  while (chosen.size < count) chosen.add(names[Math.floor(rnd() * names.length)]!);
  return [...chosen].map((path) => {
    const pieces = Math.floor(rnd() * 4) === 0 ? 0 : Math.floor(rnd() * 60);
    const content = Array.from({ length: pieces }, () => PIECES[Math.floor(rnd() * PIECES.length)]).join('');
    return { path, content, exec: rnd() < 0.2 };
  });
}

/** The loose objects of the sandbox's private store. */
function looseObjects(work: string): string[] {
  const objects = join(sandboxPaths(work).gitDir, 'objects');
  return readdirSync(objects)
    .filter((d) => /^[0-9a-f]{2}$/.test(d))
    .flatMap((d) => readdirSync(join(objects, d)).map((f) => d + f))
    .sort();
}

/**
 * git's own staging and patch of the worktree, on a scratch copy of uh's index: its tree must be
 * the one the capture named, and its diff-tree patch is returned.
 */
function gitsPatch(work: string, base: string, tree: string, rules = ''): { patch: Buffer; listed: string[] } {
  const paths = sandboxPaths(work);
  const scratch = tempDir('uh-added-index-');
  dirs.push(scratch);
  const index = join(scratch, 'index');
  // With its timestamps, as the capture copies it: an entry as new as uh's index stays "racy" and
  // git compares its content. A copy stamped now would let git trust the stat data of a file
  // edited to the same size within the second of the checkout, and miss the edit.
  copyFileSync(paths.index, index);
  const st = statSync(paths.index);
  utimesSync(index, st.atime, st.mtime);
  writeFileSync(join(scratch, 'rules'), rules);
  const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_INDEX_FILE: index };
  const run = (args: string[], input?: string) =>
    execFileSync('git', [`--git-dir=${paths.gitDir}`, `--work-tree=${work}`, ...args], {
      cwd: work,
      env,
      input,
      stdio: 'pipe',
      maxBuffer: 64 * 1024 * 1024,
    });
  const listed = run(['ls-files', '-z', '--others', '--modified', `--exclude-from=${join(scratch, 'rules')}`])
    .toString()
    .split('\0')
    .filter(Boolean)
    .sort();
  if (listed.length > 0)
    run(['add', '--force', '--pathspec-from-file=-', '--pathspec-file-nul'], `${listed.join('\0')}\0`);
  expect(run(['write-tree']).toString().trim()).toBe(tree);
  return {
    patch: run([
      'diff-tree',
      '-r',
      '--no-ext-diff',
      '--no-textconv',
      '--binary',
      '--full-index',
      '-M',
      '--patch',
      base,
      tree,
    ]),
    listed,
  };
}

async function sandboxWith(base: Record<string, string>, id: string) {
  const s = await freshSandbox(base, id, dirs, 'uh-added-');
  await captureDiff(s.sandbox.path, s.commit, s.patch, s.scratch, {
    baseFactsDir: s.baseFactsDir,
    git: IN_PROCESS_GIT,
  }); // caches the base facts
  return s;
}

describe('a change that only adds text files', () => {
  const RULES = 'z-*\n/A.txt\nsrc/deep/\n*.b\n';
  it.each([
    ['a base with no ignore rule', { 'README.md': '# one\n', 'src/keep.ts': 'k\n' }, '', 0],
    [
      'a base with ignore rules ignore-rules.ts takes (some new files ignored)',
      { 'README.md': '# one\n', '.gitignore': RULES, 'src/keep.ts': 'k\n' },
      RULES,
      0,
    ],
    [
      'a base with a negated rule: git lists (one process)',
      { 'README.md': '# one\n', '.gitignore': `${RULES}!z-last\n`, 'src/keep.ts': 'k\n' },
      `${RULES}!z-last\n`,
      1,
    ],
  ])(
    "%s: listed as git lists, staged and patched in process; the patch is git diff-tree's and applies to the base",
    async (_name, base, rules, processes) => {
      for (let seed = 1; seed <= 12; seed++) {
        const s = await sandboxWith(base, `op-added-${processes}-${rules.length}-${seed}`);
        const files = randomFiles(seed * 7919 + rules.length);
        for (const file of files) {
          const abs = join(s.sandbox.path, file.path);
          mkdirSync(dirname(abs), { recursive: true });
          writeFileSync(abs, file.content);
          if (file.exec) chmodSync(abs, 0o755);
        }
        const objectsBefore = looseObjects(s.sandbox.path);
        const before = gitProcesses();
        const got = await captureDiff(s.sandbox.path, s.commit, s.patch, s.scratch, {
          baseFactsDir: s.baseFactsDir,
          git: IN_PROCESS_GIT,
        });
        expect(gitProcesses() - before, `seed ${seed}`).toBe(processes);
        // Only the ids were computed: no object was written for git to read.
        expect(looseObjects(s.sandbox.path), `seed ${seed}`).toEqual(objectsBefore);
        const gits = gitsPatch(s.sandbox.path, s.commit, got.tree!, rules);
        expect(
          got.changed.map((c) => c.path),
          `seed ${seed}`,
        ).toEqual(gits.listed);
        expect(got.changed.every((c) => c.status === 'added')).toBe(true);
        const ours = readFileSync(s.patch);
        expect(ours.toString('latin1'), `seed ${seed}`).toBe(gits.patch.toString('latin1'));
        expect(got.bytes).toBe(ours.length);

        const clone = tempDir('uh-added-apply-');
        dirs.push(clone);
        git(['clone', '-q', s.sandbox.path, clone]);
        git(['checkout', '-q', s.commit], clone);
        if (got.bytes > 0) git(['apply', '--index', s.patch], clone);
        expect(git(['write-tree'], clone).toString().trim(), `seed ${seed}`).toBe(got.tree);
      }
    },
  );

  it('binary content, a new symlink or a modified file as well: git writes the patch (diff-tree), as before', async () => {
    const cases: Array<[string, (root: string) => void, string]> = [
      ['binary', (r) => writeFileSync(join(r, 'blob.bin'), Buffer.from([0x61, 0, 0x62])), 'GIT binary patch'],
      [
        'modified too',
        (r) => {
          writeFileSync(join(r, 'new.txt'), 'n\n');
          writeFileSync(join(r, 'README.md'), '# two\n');
        },
        '+# two',
      ],
    ];
    for (const [name, change, marker] of cases) {
      const s = await sandboxWith({ 'README.md': '# one\n' }, `op-added-git-${name.replace(/ /g, '-')}`);
      change(s.sandbox.path);
      const before = gitProcesses();
      const got = await captureDiff(s.sandbox.path, s.commit, s.patch, s.scratch, {
        baseFactsDir: s.baseFactsDir,
        git: IN_PROCESS_GIT,
      });
      expect(spawnCounts()['git diff-tree'] ?? 0).toBeGreaterThan(0);
      expect(gitProcesses() - before, name).toBeGreaterThanOrEqual(1);
      expect(readFileSync(s.patch, 'utf8'), name).toContain(marker);
      expect(readFileSync(s.patch).equals(gitsPatch(s.sandbox.path, s.commit, got.tree!).patch), name).toBe(true);
    }
  });
});

describe('worktreeAdditions', () => {
  const BOUNDS = {
    maxEntries: 500,
    maxHashBytes: 1024 * 1024,
    maxAdded: 3,
    plainName: plainComponent,
    ignored: (path: string) => path.startsWith('ign'),
  };

  it.each<[string, (root: string) => void, string[] | null]>([
    ['nothing changed', () => {}, []],
    [
      'two new files, one in a new directory',
      (r) => {
        writeFileSync(join(r, 'n.txt'), 'n');
        mkdirSync(join(r, 'd'));
        writeFileSync(join(r, 'd/x'), 'x');
      },
      ['d/x', 'n.txt'],
    ],
    [
      'a new file beside a modified one',
      (r) => {
        writeFileSync(join(r, 'n.txt'), 'n');
        writeFileSync(join(r, 'README.md'), '# changed\n');
      },
      null,
    ],
    [
      'a new directory holding a .git (a nested repository)',
      (r) => {
        mkdirSync(join(r, 'd/.git'), { recursive: true });
        writeFileSync(join(r, 'd/f'), 'f');
      },
      null,
    ],
    ['a .git file in a tracked directory', (r) => writeFileSync(join(r, 'src/.git'), 'gitdir: /elsewhere\n'), null],
    ['an empty new directory', (r) => mkdirSync(join(r, 'empty')), null],
    ['a new symlink', (r) => symlinkSync('README.md', join(r, 'link')), null],
    ['a name git would quote', (r) => writeFileSync(join(r, 'na me'), 'x'), null],
    ['more new files than the bound', (r) => ['a', 'b', 'c', 'd'].forEach((n) => writeFileSync(join(r, n), n)), null],
    [
      'ignored entries of any kind, left out whole',
      (r) => {
        mkdirSync(join(r, 'ign-dir/.git'), { recursive: true });
        symlinkSync('README.md', join(r, 'ign-link'));
        mkdirSync(join(r, 'ign-empty'));
        writeFileSync(join(r, 'n.txt'), 'n');
      },
      ['n.txt'],
    ],
    [
      'a name outside printable ASCII, even one the rules would ignore',
      (r) => writeFileSync(join(r, 'ign-é'), 'x'),
      null,
    ],
  ])('%s', async (_name, change, expected) => {
    const s = await freshSandbox(
      { 'README.md': '# one\n', 'src/app.ts': 'a\n' },
      `op-additions-${Math.random().toString(16).slice(2, 8)}`,
      dirs,
      'uh-additions-',
    );
    change(s.sandbox.path);
    const index = sandboxPaths(s.sandbox.path).index;
    expect(worktreeAdditions(s.sandbox.path, index, readIndexEntries(index, 20) ?? [], 'sha1', BOUNDS)).toEqual(
      expected,
    );
  });
});
