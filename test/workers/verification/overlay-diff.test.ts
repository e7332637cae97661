/**
 * The overlay backend's diff proves itself against the worktree backend's: the same base, the
 * same edits (shell scripts, run in a worktree sandbox and, inside its mount namespace, in an
 * overlay sandbox over the shared base checkout), and the same capture must come out: names,
 * tree, patch bytes, digest, flags. The overlay's listing must come from its upper layer (a few
 * pathspecs, not the whole tree). Also: the base is shared and never written, a changed base is
 * rebuilt, leases hold a base against collection.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GIT_PROCESSES, IN_PROCESS_GIT } from '../../../src/workers/git-path.js';
import { resolveInMirror } from '../../../src/workers/sandbox/mirror-cache.js';
import {
  acquireBase,
  baseSeal,
  collectBase,
  releaseBase,
  unusedBases,
} from '../../../src/workers/sandbox/overlay-base.js';
import { overlayLaunchArgv, probeOverlay } from '../../../src/workers/sandbox/overlay-mount.js';
import { spawnGroup } from '../../../src/shared/process/spawn-group.js';
import { createOverlaySandbox, removeOverlaySandbox } from '../../../src/workers/sandbox/overlay-sandbox.js';
import { createSandbox, sandboxPaths } from '../../../src/workers/sandbox/worktree.js';
import { captureDiff } from '../../../src/workers/verification/capture-diff.js';
import { readBaseFacts } from '../../../src/workers/verification/base-ignore.js';
import {
  captureOverlayDiff,
  overlayDiffMain,
  overlayTreeWork,
  startOverlayHelper,
} from '../../../src/workers/verification/overlay-diff.js';
import { treeWork, type TreeWorkRequest, type TreeWorkResult } from '../../../src/workers/verification/tree-work.js';
import { DEFAULT_DIFF_CAP_BYTES } from '../../../src/shared/config.js';
import { applyGc, planGc } from '../../../src/workers/sandbox/gc.js';
import { git } from '../../support/git-repo.js';
import { seeded } from '../../support/spawned.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
const temp = (prefix: string) => {
  const dir = tempDir(prefix);
  dirs.push(dir);
  return dir;
};

let unshare = '';
beforeAll(() => {
  const probe = probeOverlay(temp('uh-ovl-probe-'), process.env.PATH);
  if (!probe.ok) throw new Error(`this host cannot mount an overlay in a user namespace: ${probe.reason}`);
  unshare = probe.unshare;
  if (!existsSync(overlayDiffMain()[0]!))
    throw new Error(`${overlayDiffMain()[0]} is missing: run npm run build first`);
});

/** What an agent does, as a shell script run in the sandbox's root (guards keep a script valid after another). */
const EDITS: Record<string, string> = {
  'same-size edit': "printf '# two\\n' > README.md",
  append: 'echo more >> docs/guide.md',
  'x bit set': '[ -f src/app.ts ] && chmod 755 src/app.ts',
  'x bit cleared': '[ -f run.sh ] && chmod 644 run.sh',
  'symlink retargeted': 'rm -f link && ln -s src/app.ts link',
  'new symlink leaving the tree': 'ln -sf ../outside new-link',
  'ignored files added': 'echo log > x.log; mkdir -p build && echo out > build/out.txt',
  'plain files added': 'echo n > new.txt; mkdir -p p/q/r && echo deep > p/q/r/w.txt',
  delete: 'rm -f src/app.ts',
  'file renamed': '[ -f docs/guide.md ] && mkdir -p moved && mv docs/guide.md moved/guide.md',
  'directory renamed': '[ -d fill/d2 ] && mv fill/d2 fill/renamed',
  'directory removed and made again (opaque)': 'rm -rf fill/d1 && mkdir -p fill/d1 && echo again > fill/d1/other.txt',
  'directory replaced by a file': 'rm -rf dir && echo file > dir',
  'file replaced by a directory': 'rm -rf run.sh && mkdir run.sh && echo x > run.sh/inside.txt',
  'touched, unchanged (copied up)': 'touch README.md fill/d3/f3.txt',
  'x bit there and back': '[ -f fill/d4/f4.txt ] && chmod 755 fill/d4/f4.txt && chmod 644 fill/d4/f4.txt',
  'deleted and written again, same bytes':
    '[ -f fill/d0/f0.txt ] && cat fill/d0/f0.txt > .keep && rm fill/d0/f0.txt && mv .keep fill/d0/f0.txt',
  'deep tree deleted': 'rm -rf a',
  'nested repository':
    'mkdir -p vendor/lib/.git && echo ref > vendor/lib/.git/HEAD && echo "int x;" > vendor/lib/code.c',
  'names git quotes': "mkdir -p 'with space' && echo s > 'with space/a b.txt' && echo e > 'é-name.txt'",
  'empty directory': 'mkdir -p empty-dir',
  '.gitignore rewritten to hide a file': "printf '*.txt\\nhidden*\\n' > .gitignore; echo h > hidden.md",
  'nothing at all': 'true',
};
const EDIT_NAMES = Object.keys(EDITS);

function write(root: string, path: string, body: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), body);
}

/** A base: modes, symlinks, deep paths, ignore rules, and 60 filler files in 6 directories. */
function baseRepo(): string {
  const repo = temp('uh-ovl-repo-');
  git(repo, 'init', '-q', '-b', 'main');
  write(repo, 'README.md', '# one\n');
  write(repo, 'src/app.ts', 'export const a = 1;\n');
  write(repo, 'a/b/c/d/deep.txt', 'deep\n');
  write(repo, 'docs/guide.md', 'line one\nline two\nline three\n');
  write(repo, 'dir/inner.txt', 'inner\n');
  write(repo, 'run.sh', '#!/bin/sh\necho hi\n');
  chmodSync(join(repo, 'run.sh'), 0o755);
  symlinkSync('README.md', join(repo, 'link'));
  write(repo, '.gitignore', '*.log\n/build\n');
  for (let i = 0; i < 60; i++) write(repo, `fill/d${i % 6}/f${i}.txt`, `filler ${i}\n`);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
  return repo;
}

function runIn(argv: string[], cwd: string): void {
  const run = spawnSync(argv[0] as string, argv.slice(1), { cwd, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${argv.join(' ')}: ${run.stderr}`);
}

/** The tree of the (one) base checkout in `cacheDir`. */
function acquiredTree(cacheDir: string): string {
  const bases = join(cacheDir, 'sandboxes', '.bases');
  const [name] = readdirSync(bases).filter((b) => existsSync(join(bases, b, 'tree')));
  return join(bases, name as string, 'tree');
}

const patchOf = (path: string) => readFileSync(path).toString('latin1');

/** A tree step's request over `mirror` at `commit` (no kept ignored files, generous bounds); workDir apart. */
function treeRequest(mirror: string, commit: string, factsDir: string, scratch: string) {
  return {
    mirrorPath: mirror,
    baseCommit: commit,
    patchPath: join(scratch, 'diff.patch'),
    scratchDir: scratch,
    factsDir,
    gitFastPath: true,
    capBytes: DEFAULT_DIFF_CAP_BYTES,
    keep: [] as string[],
    pathBounds: { maxBytes: 1024, maxDepth: 32 },
    worktreeBounds: { bytes: 1e9, files: 1e6 },
  };
}

/** A fresh base and cache, and an overlay sandbox `name` over it in which the agent deleted src/app.ts. */
async function deletedInOverlay(name: string) {
  const cacheDir = temp('uh-ovl-cache-');
  const { mirror, commit } = await resolveInMirror(cacheDir, baseRepo(), 'HEAD', {}, GIT_PROCESSES);
  const overlay = await createOverlaySandbox(cacheDir, mirror, commit, name, new Date());
  const edit = ['/bin/sh', '-c', `cd "$0" && ${EDITS.delete}`, overlay.path];
  runIn(overlayLaunchArgv(unshare, overlay.layers, edit), '/');
  return { cacheDir, mirror, commit, overlay };
}

describe('the overlay backend diff against the worktree backend', () => {
  it('gives the same names, tree, patch, digest and flags over generated changes, listing only the upper layer', async () => {
    const repo = baseRepo();
    const cacheDir = temp('uh-ovl-cache-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const baseFactsDir = join(cacheDir, 'derived', 'base-facts');
    const seen = new Set<string>();
    for (let seed = 1; seed <= 28; seed++) {
      const rnd = seeded(seed * 2654435761);
      const edits = Array.from(
        { length: Math.floor(rnd() * 4) },
        () => EDIT_NAMES[Math.floor(rnd() * EDIT_NAMES.length)]!,
      );
      if (seed <= EDIT_NAMES.length) edits.unshift(EDIT_NAMES[seed - 1]!);
      edits.forEach((e) => seen.add(e));
      const script = edits.map((e) => `(${EDITS[e]}) || true`).join('\n');
      const tree = await createSandbox(cacheDir, mirror, commit, `op-wt-${seed}`, new Date());
      const overlay = await createOverlaySandbox(cacheDir, mirror, commit, `op-ovl-${seed}`, new Date());
      expect(overlay.base.fresh).toBe(seed === 1);
      runIn(['/bin/sh', '-c', script], tree.path);
      runIn(overlayLaunchArgv(unshare, overlay.layers, ['/bin/sh', '-c', `cd "$0" && ${script}`, overlay.path]), '/');
      await readBaseFacts(sandboxPaths(tree.path).gitDir, commit, baseFactsDir, {});
      const scratchA = temp('uh-ovl-a-');
      const byTree = await captureDiff(tree.path, commit, join(scratchA, 'diff.patch'), scratchA, {
        baseFactsDir,
        git: IN_PROCESS_GIT,
      });
      const scratchB = temp('uh-ovl-b-');
      const byOverlay = await captureOverlayDiff(
        {
          baseCommit: commit,
          patchPath: join(scratchB, 'diff.patch'),
          scratchDir: scratchB,
          gitFastPath: true,
          capBytes: DEFAULT_DIFF_CAP_BYTES,
          keptIgnored: [],
          excluded: [],
          baseFactsDir,
          timeoutMs: null,
        },
        { unshare, layers: overlay.layers, timeoutMs: 60_000 },
      );
      const why = `seed ${seed}: ${edits.join(', ')}`;
      const { patchPath: _a, ...treeView } = byTree;
      const { patchPath: _b, listed, ...overlayView } = byOverlay;
      expect(overlayView, why).toEqual(treeView);
      expect(patchOf(byOverlay.patchPath), why).toBe(patchOf(byTree.patchPath));
      // Linear in the change: the pathspecs of the upper layer (about one per change), never the 70-file tree.
      expect(listed, why).not.toBeNull();
      expect(listed!, why).toBeLessThanOrEqual(byTree.changed.length + 2 * edits.length + 1);
      await removeOverlaySandbox(cacheDir, { ...overlay, mirror: mirror.path, base: overlay.base.name });
    }
    expect([...seen].sort()).toEqual([...EDIT_NAMES].sort());
  }, 240_000);

  it('runs the whole tree step (bounds, .git, walk, ignored files, diff) as a worktree does, walking only what the upper layer touched, started ahead or not', async () => {
    const repo = baseRepo();
    const cacheDir = temp('uh-ovl-cache-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const factsDir = join(cacheDir, 'derived', 'base-facts');
    const codeCacheDir = join(cacheDir, 'code-cache');
    // Depth 4: the base's own a/b/c/d/deep.txt is past it, a violation the base's facts must carry.
    const request = (workDir: string, scratch: string): TreeWorkRequest => ({
      workDir,
      ...treeRequest(mirror.path, commit, factsDir, scratch),
      keep: ['build/**'],
      pathBounds: { maxBytes: 1024, maxDepth: 4 },
    });
    for (let seed = 1; seed <= 14; seed++) {
      const rnd = seeded(seed * 40503);
      const edits = Array.from(
        { length: 1 + Math.floor(rnd() * 3) },
        () => EDIT_NAMES[Math.floor(rnd() * EDIT_NAMES.length)]!,
      );
      if (seed === 1) edits.push('.git replaced by a gitfile');
      const all = { ...EDITS, '.git replaced by a gitfile': 'rm -rf .git && printf "gitdir: /tmp\\n" > .git' };
      const script = edits.map((e) => `(${all[e as keyof typeof all]}) || true`).join('\n');
      const tree = await createSandbox(cacheDir, mirror, commit, `op-tw-${seed}`, new Date());
      const overlay = await createOverlaySandbox(cacheDir, mirror, commit, `op-to-${seed}`, new Date());
      // Odd seeds: the helper started before the agent's edits, as the pipeline does, mounting after them.
      const started = seed % 2 === 1 ? startOverlayHelper({ unshare, timeoutMs: 60_000, codeCacheDir }) : undefined;
      runIn(['/bin/sh', '-c', script], tree.path);
      runIn(overlayLaunchArgv(unshare, overlay.layers, ['/bin/sh', '-c', `cd "$0" && ${script}`, overlay.path]), '/');
      const byTree = await treeWork(request(tree.path, temp('uh-tw-a-')));
      const { workDir: _w, ...rest } = request(overlay.path, temp('uh-tw-b-'));
      const run = { unshare, layers: overlay.layers, timeoutMs: 60_000, codeCacheDir, ...(started ? { started } : {}) };
      const byOverlay = await overlayTreeWork(rest, run);
      started?.close();
      const why = `seed ${seed}: ${edits.join(', ')}`;
      const strip = (r: TreeWorkResult) => ({ ...r, diff: r.diff && { ...r.diff, patchPath: '' } });
      expect(strip(byOverlay), why).toEqual(strip(byTree));
      expect(
        byTree.walked.map((v) => v.path),
        why,
      ).toContain('a/b/c/d/deep.txt');
      await removeOverlaySandbox(cacheDir, { ...overlay, mirror: mirror.path, base: overlay.base.name });
    }
    // The helper's code cache was made (once: bin/overlay-helper.js) for the next helpers to start from.
    expect(readdirSync(codeCacheDir).filter((n) => /^overlay-helper-[0-9a-f]{32}-.*-tree\.bin$/.test(n))).toHaveLength(
      1,
    );
    // The base's facts were found once, beside it, and only its untouched directories were taken from them.
    const facts = JSON.parse(readFileSync(join(dirname(acquiredTree(cacheDir)), 'tree-facts.json'), 'utf8'));
    expect(facts.violations).toEqual([{ path: 'a/b/c/d/deep.txt', reason: 'path_too_deep' }]);
  }, 240_000);

  it('catches an overlay listing that misses the upper layer: the diff then differs', async () => {
    const { commit, overlay } = await deletedInOverlay('op-ovl-blind');
    const scratch = temp('uh-ovl-c-');
    const request = {
      baseCommit: commit,
      patchPath: join(scratch, 'diff.patch'),
      scratchDir: scratch,
      gitFastPath: true,
      capBytes: DEFAULT_DIFF_CAP_BYTES,
      keptIgnored: [],
      excluded: [],
      baseFactsDir: null,
      timeoutMs: null,
    };
    const seeing = await captureOverlayDiff(request, { unshare, layers: overlay.layers, timeoutMs: 60_000 });
    expect(seeing.changed).toEqual([{ path: 'src/app.ts', status: 'deleted' }]);
    // The same sandbox with an empty upper layer named (a blind reader): nothing is listed.
    const blind = { ...overlay.layers, upper: temp('uh-ovl-empty-') };
    const missed = await captureOverlayDiff(request, {
      unshare,
      layers: { ...blind, work: temp('uh-ovl-w-') },
      timeoutMs: 60_000,
    });
    expect(missed.changed).toEqual([]);
  }, 60_000);
});

/** Polls until process `pid` is gone; false at the deadline. */
async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a helper started ahead', () => {
  it('is ended by close or by its wait when it got no request, and one gone before its request is replaced by a fresh one', async () => {
    const unused = startOverlayHelper({ unshare, timeoutMs: 60_000 });
    expect(unused.pid).toBeGreaterThan(0);
    unused.close();
    expect(await goneWithin(unused.pid!, 10_000)).toBe(true);
    expect(unused.take()).toBeNull();

    const { cacheDir, mirror, commit, overlay } = await deletedInOverlay('op-ovl-gone');
    // An agent that runs longer than the helper waits: it has ended itself (its bound, too, ends it).
    const waited = startOverlayHelper({ unshare, timeoutMs: 60_000, waitMs: 100 });
    const gone = startOverlayHelper({ unshare, timeoutMs: 1 });
    expect(await goneWithin(waited.pid!, 3000)).toBe(true); // well before HELPER_WAIT_MS
    expect(await goneWithin(gone.pid!, 10_000)).toBe(true);
    expect(waited.take()).toBeNull();
    const scratch = temp('uh-ovl-g-');
    const result = await overlayTreeWork(
      treeRequest(mirror.path, commit, join(cacheDir, 'derived', 'base-facts'), scratch),
      { unshare, layers: overlay.layers, timeoutMs: 60_000, started: gone },
    );
    expect(result.diff?.changed).toEqual([{ path: 'src/app.ts', status: 'deleted' }]);
  }, 60_000);

  it('one that fails on its request is replaced by a fresh one, and the result says why', async () => {
    const { cacheDir, mirror, commit, overlay } = await deletedInOverlay('op-ovl-failed');
    // Running when taken, then failing as a helper would that lost its mount.
    const failing = spawnGroup({
      argv: ['sh', '-c', 'read -r line; echo mount went away >&2; exit 3'],
      cwd: '/',
      env: { PATH: '/usr/bin:/bin' },
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'pipe',
    });
    let taken = false;
    const started = { pid: failing.pid, take: () => (taken ? null : ((taken = true), failing)), close: () => {} };
    const result = await overlayTreeWork(
      treeRequest(mirror.path, commit, join(cacheDir, 'derived', 'base-facts'), temp('uh-ovl-f-')),
      { unshare, layers: overlay.layers, timeoutMs: 60_000, started },
    );
    expect(taken).toBe(true);
    expect(result.diff?.changed).toEqual([{ path: 'src/app.ts', status: 'deleted' }]);
    expect(result.helperFailure).toMatch(/the overlay helper exited 3: mount went away/);
  }, 60_000);
});

describe('base checkouts', () => {
  it('are shared, never written by a mission, rebuilt when changed, and held by their leases', async () => {
    const repo = baseRepo();
    const cacheDir = temp('uh-ovl-cache-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const one = await createOverlaySandbox(cacheDir, mirror, commit, 'op-one', new Date());
    const two = await createOverlaySandbox(cacheDir, mirror, commit, 'op-two', new Date());
    expect([one.base.fresh, two.base.fresh]).toEqual([true, false]);
    expect(two.base.name).toBe(one.base.name);
    runIn(
      overlayLaunchArgv(unshare, one.layers, [
        '/bin/sh',
        '-c',
        'cd "$0" && echo agent > README.md && rm -rf fill',
        one.path,
      ]),
      '/',
    );
    expect(readFileSync(join(one.base.tree, 'README.md'), 'utf8')).toBe('# one\n');
    expect(existsSync(join(one.base.tree, 'fill', 'd0', 'f0.txt'))).toBe(true);
    // Someone changed the base on disk: the next mission gets a new one, never the changed bytes.
    chmodSync(join(one.base.tree, 'src', 'app.ts'), 0o755);
    const reasons: string[] = [];
    const rebuilt = await acquireBase(cacheDir, mirror, commit, 'op-three-x', (_n, why) => reasons.push(why));
    expect(rebuilt.fresh).toBe(true);
    expect(rebuilt.name).not.toBe(one.base.name);
    expect(reasons.join()).toMatch(/src\/app\.ts/);
    // The old base stays while its two sandboxes lease it, and goes with the last lease.
    await removeOverlaySandbox(cacheDir, { ...one, mirror: mirror.path, base: one.base.name });
    expect(existsSync(one.base.tree)).toBe(true);
    await removeOverlaySandbox(cacheDir, { ...two, mirror: mirror.path, base: two.base.name });
    expect(existsSync(one.base.tree)).toBe(false);
    // The new one, leased by a holder that no longer exists, is collectable; with a live holder it is not.
    expect(unusedBases(cacheDir, new Set(['op-three-x'])).map((b) => b.name)).toEqual([]);
    expect(unusedBases(cacheDir, new Set()).map((b) => b.name)).toEqual([rebuilt.name]);
    expect(await collectBase(cacheDir, rebuilt.name, new Set(['op-three-x']))).toBe(false);
    expect(await collectBase(cacheDir, rebuilt.name, new Set())).toBe(true);
    expect(existsSync(rebuilt.tree)).toBe(false);
    await releaseBase(cacheDir, rebuilt.name, 'op-three-x');
  }, 60_000);

  it('are shared on their seal; a seal that differs is decided by the strict proof, which seals again or rebuilds', async () => {
    const repo = baseRepo();
    const cacheDir = temp('uh-ovl-cache-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const first = await acquireBase(cacheDir, mirror, commit, 'op-s1');
    const sealPath = join(dirname(first.tree), 'seal');
    const sealed = readFileSync(sealPath, 'utf8').trim();
    expect(sealed).toBe(await baseSeal(first.tree));
    expect((await acquireBase(cacheDir, mirror, commit, 'op-s2')).name).toBe(first.name);
    // A lost or stale seal is no doubt by itself: the strict proof passes and seals the base again.
    writeFileSync(sealPath, 'stale\n');
    expect((await acquireBase(cacheDir, mirror, commit, 'op-s3')).name).toBe(first.name);
    expect(readFileSync(sealPath, 'utf8').trim()).toBe(sealed);
    // A file written again with its own bytes: size and mtime can be put back, its ctime cannot.
    const file = join(first.tree, 'fill', 'd1', 'f1.txt');
    const { atime, mtime } = statSync(file);
    writeFileSync(file, readFileSync(file));
    utimesSync(file, atime, mtime);
    expect(await baseSeal(first.tree)).not.toBe(sealed);
    const reasons: string[] = [];
    const rebuilt = await acquireBase(cacheDir, mirror, commit, 'op-s4', (_n, why) => reasons.push(why));
    expect(rebuilt.name).not.toBe(first.name);
    expect(reasons.join()).toMatch(/fill\/d1\/f1\.txt: it changed since the checkout/);
    for (const holder of ['op-s1', 'op-s2', 'op-s3']) await releaseBase(cacheDir, first.name, holder);
    await releaseBase(cacheDir, rebuilt.name, 'op-s4');
  }, 60_000);

  it('are collected by uh gc once no live sandbox leases them: when idle, and first under the cache cap', async () => {
    const repo = baseRepo();
    const cacheDir = temp('uh-ovl-cache-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const sandbox = await createOverlaySandbox(cacheDir, mirror, commit, 'op-gc', new Date());
    const ports = { operationState: async () => 'running' };
    const later = new Date(Date.now() + 40 * 24 * 3600_000);
    const policy = { now: later, mirrorIdleDays: 30, operationRetentionDays: 30, cacheCapBytes: 0 };
    // Leased by a running mission: never planned, even long idle.
    const kinds = async (p: typeof policy) => (await planGc(cacheDir, null, p, ports)).map((i) => i.kind);
    expect(await kinds(policy)).not.toContain('base_idle');
    await removeOverlaySandbox(cacheDir, { ...sandbox, mirror: mirror.path, base: sandbox.base.name });
    expect(existsSync(sandbox.base.tree)).toBe(true); // still current: the next mission shares it
    expect(await kinds({ ...policy, now: new Date() })).not.toContain('base_idle');
    expect(await kinds({ ...policy, now: new Date(), cacheCapBytes: 1 })).toContain('base_cap');
    const plan = await planGc(cacheDir, null, policy, ports);
    expect(plan.map((i) => i.kind)).toContain('base_idle');
    const { removed } = await applyGc(cacheDir, plan, later);
    expect(removed.map((i) => i.kind)).toContain('base_idle');
    expect(existsSync(sandbox.base.tree)).toBe(false);
    // The next mission at that commit checks the base out again (the idle mirror went too: fetched again).
    const fetched = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const again = await createOverlaySandbox(cacheDir, fetched.mirror, commit, 'op-gc-2', new Date());
    expect(again.base.fresh).toBe(true);
  }, 60_000);
});
