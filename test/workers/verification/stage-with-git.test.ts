/**
 * The diff's staging by git (`stage-with-git.ts`): one `update-index` reads the listed paths on
 * stdin, so a change of 40,000 new files stages in one process in time linear in their number
 * (`git add` with 40,000 pathspecs took 27 s on this machine, ~18× a plain `git add -A && git
 * diff --cached`), and the final tree is the one `git add -A` gives the same edits in a checkout:
 * a file replaced by a directory and back, a directory replaced by a link (to a directory holding
 * the same names, which `git add` of the listed paths refused), deletions, modes. Both git paths.
 * A name git will not store, or one that is not UTF-8, fails the capture instead of leaving the
 * diff quietly.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GIT_PROCESSES, IN_PROCESS_GIT } from '../../../src/workers/git-path.js';
import { captureDiff } from '../../../src/workers/verification/capture-diff.js';
import { git } from '../../support/git-repo.js';
import { freshSandbox } from '../../support/sandbox.js';
import { spawnCounts } from '../../../src/shared/process/spawn-group.js';
import { removeDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const BASE = {
  'README.md': '# one\n',
  'run.sh': '#!/bin/sh\n',
  'dir/inner.txt': 'inner\n',
  'dir/more.txt': 'more\n',
  'other/inner.txt': 'other inner\n',
  'other/more.txt': 'other more\n',
  'docs/guide.md': 'guide\n',
  'src/app.ts': 'export {};\n',
};

const write = (root: string, path: string, body: string) => {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), body);
};

const EDITS: Record<string, (root: string) => void> = {
  'a file replaced by a directory': (r) => {
    rmSync(join(r, 'run.sh'));
    write(r, 'run.sh/inside.txt', 'x\n');
  },
  'a directory replaced by a file': (r) => {
    rmSync(join(r, 'dir'), { recursive: true });
    write(r, 'dir', 'now a file\n');
  },
  'a directory replaced by a link to one holding the same names': (r) => {
    rmSync(join(r, 'dir'), { recursive: true });
    symlinkSync('other', join(r, 'dir'));
  },
  'a directory replaced by a link to one without them': (r) => {
    rmSync(join(r, 'docs'), { recursive: true });
    symlinkSync('src', join(r, 'docs'));
  },
  'deletions, edits, new files and an x bit': (r) => {
    rmSync(join(r, 'docs/guide.md'));
    write(r, 'README.md', '# two\n');
    write(r, 'new/deep/file.txt', 'new\n');
    chmodSync(join(r, 'src/app.ts'), 0o755);
  },
};

describe('staging by git', () => {
  describe.each([
    ['git processes', GIT_PROCESSES],
    ['in process first', IN_PROCESS_GIT],
  ])('%s', (_name, path) => {
    it.each(Object.keys(EDITS))('%s: the tree git add -A makes of the same edits', async (edit) => {
      const { sandbox, commit, scratch, patch, cacheDir } = await freshSandbox(BASE, `op-stage-${dirs.length}`, dirs);
      // The same edits in a checkout of the base, staged by `git add -A`: the tree to match.
      const checkout = join(cacheDir, 'checkout');
      git(cacheDir, 'clone', '-q', sandbox.mirror.url, checkout);
      git(checkout, 'checkout', '-q', commit);
      EDITS[edit]!(checkout);
      git(checkout, 'add', '-A');
      const expected = git(checkout, 'write-tree');
      EDITS[edit]!(sandbox.path);
      const got = await captureDiff(sandbox.path, commit, patch, scratch, { git: path });
      expect(got.tree).toBe(expected);
    });
  });

  it('a name git will not store fails the capture, naming it; so does one that is not UTF-8', async () => {
    const { sandbox, commit, scratch, patch } = await freshSandbox(BASE, 'op-stage-refused', dirs);
    write(sandbox.path, '.GIT/x', 'hidden?\n');
    write(sandbox.path, 'src/ok.ts', 'ok\n');
    for (const path of [GIT_PROCESSES, IN_PROCESS_GIT])
      await expect(captureDiff(sandbox.path, commit, patch, scratch, { git: path })).rejects.toThrow(
        /a path git will not store: \.GIT\/x/,
      );
    rmSync(join(sandbox.path, '.GIT'), { recursive: true });
    writeFileSync(Buffer.from(join(sandbox.path, 'src/bad-\xff.txt'), 'latin1'), 'latin1 name\n');
    for (const path of [GIT_PROCESSES, IN_PROCESS_GIT])
      await expect(captureDiff(sandbox.path, commit, patch, scratch, { git: path })).rejects.toThrow(/not UTF-8/);
  });
});

/** One file per path, unique content, 200 directories. */
function addFiles(root: string, count: number): void {
  for (let d = 0; d < 200; d++) mkdirSync(join(root, 'gen', `d${d}`), { recursive: true });
  for (let i = 0; i < count; i++) writeFileSync(join(root, 'gen', `d${i % 200}`, `f${i}.txt`), `file ${i}\n`);
}

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

// The suite stages 10,000 (a quarter of the bench's 40,000, `npm run bench -- diff`): enough for
// the ratio to show a per-path cost, inside the suite's time on a 2-core CI machine.
describe('10,000 new files', () => {
  it('stage in one update-index, and the diff costs a few times a plain git add -A && git diff --cached, not 18×', async () => {
    const files = 10_000;
    const own: string[] = [];
    const { sandbox, commit, scratch, patch, cacheDir } = await freshSandbox(BASE, 'op-stage-10k', own);
    try {
      const checkout = join(cacheDir, 'plain');
      git(cacheDir, 'clone', '-q', sandbox.mirror.url, checkout);
      git(checkout, 'checkout', '-q', commit);
      addFiles(checkout, files);
      addFiles(sandbox.path, files);
      const baseFactsDir = join(cacheDir, 'base-facts');
      const plain = () => {
        const t = process.hrtime.bigint();
        rmSync(join(checkout, '.git', 'index'));
        git(checkout, 'read-tree', commit);
        execFileSync('sh', ['-c', 'git add -A && git diff --cached --binary > ../plain.patch'], { cwd: checkout });
        return ms(t);
      };
      const ours = async () => {
        const t = process.hrtime.bigint();
        const got = await captureDiff(sandbox.path, commit, patch, scratch, { git: IN_PROCESS_GIT, baseFactsDir });
        expect(got.changed).toHaveLength(files);
        return ms(t);
      };
      const before = spawnCounts()['git update-index'] ?? 0;
      const times = { plain: [plain()], ours: [await ours()] };
      // One staging process, the paths on its stdin (never one per path, never N pathspecs to add).
      expect((spawnCounts()['git update-index'] ?? 0) - before).toBe(1);
      expect(spawnCounts()['git add'] ?? 0).toBe(0);
      const ratio = () => Math.min(...times.ours) / Math.min(...times.plain);
      // A second round only when the first looks slow (a busy machine), best of each kept.
      if (ratio() >= 4) {
        times.plain.push(plain());
        times.ours.push(await ours());
      }
      // The bench's target is 2× (docs/benchmarks.md); 4× leaves room for a busy machine, and a
      // quadratic staging (27 s against ~1.5 s) is far beyond it.
      expect(ratio(), `ours ${times.ours.join(', ')} ms, plain ${times.plain.join(', ')} ms`).toBeLessThan(4);
    } finally {
      // Inside the test's own time: 20,000 files and their objects take a while to remove.
      own.forEach(removeDir);
    }
  }, 300_000);
});
