/**
 * Copy-on-write sandboxes (`UH_SANDBOX_BACKEND=overlay`, docs/sandboxes.md) against the
 * `git worktree add` floor, on a generated repository of `UH_BENCH_FILES` files (default 5,000;
 * the first size only). One cycle is what the floor script does: make a sandbox, append a line to
 * README.md, take the diff, remove the sandbox. Contenders, interleaved, medians:
 *   floor          `git worktree add --detach` + edit + `git diff` + `git worktree remove`;
 *   worktree cold  uh's worktree backend without the pool (`createSandbox`, `captureDiff`, remove);
 *   overlay        uh's overlay backend at a base already checked out (lease, upper layer, the
 *                  edit and the diff each in the sandbox's mount namespace, remove);
 * then once: the overlay's first sandbox at a new base (the base checkout itself), and 9
 * concurrent overlay missions at one base (wall time against one `git worktree add`, and disk
 * used against one checkout). The same through the CLI (`uh mission run`, `uh batch run`,
 * workers): cow-missions.ts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmtMs, interleave, median, printTable } from './bench-kit.js';
import { makeRepo } from './inline-vs-floor.js';
import { GIT_PROCESSES, IN_PROCESS_GIT } from '../src/workers/git-path.js';
import { resolveInMirror } from '../src/workers/sandbox/mirror-cache.js';
import { overlayLaunchArgv, probeOverlay } from '../src/workers/sandbox/overlay-mount.js';
import { createOverlaySandbox, removeOverlaySandbox } from '../src/workers/sandbox/overlay-sandbox.js';
import { createSandbox, removeSandbox } from '../src/workers/sandbox/worktree.js';
import { captureDiff } from '../src/workers/verification/capture-diff.js';
import { captureOverlayDiff } from '../src/workers/verification/overlay-diff.js';
import { DEFAULT_DIFF_CAP_BYTES } from '../src/shared/config.js';
import type { Mirror } from '../src/workers/sandbox/mirror-cache.js';

const ROUNDS = Number(process.env.UH_BENCH_ROUNDS ?? 5);
const EDIT = 'echo edited >> README.md';

function du(path: string): number {
  return Number(execFileSync('du', ['-sk', path], { encoding: 'utf8' }).split('\t')[0]) * 1024;
}

function floor(repo: string, wt: string): void {
  const script = `set -e; git worktree add --detach --quiet "$1" HEAD; ${EDIT.replace('README.md', '"$1/README.md"')}; git -C "$1" diff > "$1.patch"; git worktree remove --force "$1"; rm -f "$1.patch"`;
  const r = spawnSync('sh', ['-c', script, 'floor', wt], { cwd: repo });
  if (r.status !== 0) throw new Error(`floor failed: ${r.stderr}`);
}

interface Setup {
  root: string;
  cacheDir: string;
  mirror: Mirror;
  commit: string;
  unshare: string;
}

let n = 0;

/** One overlay cycle; `keep` holds the sandbox (for the disk figure) and returns its remover. */
async function overlayCycle(s: Setup, keep = false): Promise<() => Promise<void>> {
  const sandbox = await createOverlaySandbox(s.cacheDir, s.mirror, s.commit, `bench-${++n}`, new Date());
  const argv = overlayLaunchArgv(s.unshare, sandbox.layers, ['/bin/sh', '-c', `cd "$0" && ${EDIT}`, sandbox.path]);
  const edit = spawnSync(argv[0] as string, argv.slice(1));
  if (edit.status !== 0) throw new Error(`overlay edit failed: ${edit.stderr}`);
  const scratch = join(s.root, `scratch-${n}`);
  mkdirSync(scratch, { recursive: true });
  const diff = await captureOverlayDiff(
    {
      baseCommit: s.commit,
      patchPath: join(scratch, 'diff.patch'),
      scratchDir: scratch,
      gitFastPath: true,
      capBytes: DEFAULT_DIFF_CAP_BYTES,
      keptIgnored: [],
      excluded: [],
      baseFactsDir: join(s.cacheDir, 'derived', 'base-facts'),
      timeoutMs: null,
    },
    { unshare: s.unshare, layers: sandbox.layers, timeoutMs: 120_000 },
  );
  if (diff.changed.length !== 1) throw new Error(`the overlay diff lists ${diff.changed.length} files`);
  const remove = async () => {
    await removeOverlaySandbox(s.cacheDir, { ...sandbox, mirror: s.mirror.path, base: sandbox.base.name });
    rmSync(scratch, { recursive: true, force: true });
  };
  if (!keep) await remove();
  return remove;
}

async function worktreeCycle(s: Setup): Promise<void> {
  const sandbox = await createSandbox(s.cacheDir, s.mirror, s.commit, `bench-${++n}`, new Date());
  spawnSync('sh', ['-c', EDIT], { cwd: sandbox.path });
  const scratch = join(s.root, `scratch-${n}`);
  mkdirSync(scratch, { recursive: true });
  await captureDiff(sandbox.path, s.commit, join(scratch, 'diff.patch'), scratch, {
    git: IN_PROCESS_GIT,
    baseFactsDir: join(s.cacheDir, 'derived', 'base-facts'),
  });
  await removeSandbox(s.cacheDir, { name: sandbox.name, path: sandbox.path, mirror: s.mirror.path });
  rmSync(scratch, { recursive: true, force: true });
}

async function concurrent(s: Setup, repo: string): Promise<Record<string, string | number>> {
  const t0 = performance.now();
  floor(repo, join(s.root, 'wt-one'));
  const one = performance.now() - t0;
  const checkout = du(join(repo, 'src')) + du(join(repo, 'README.md'));
  const before = du(join(s.cacheDir, 'sandboxes'));
  const t1 = performance.now();
  const removers = await Promise.all(Array.from({ length: 9 }, () => overlayCycle(s, true)));
  const wall = performance.now() - t1;
  const used = du(join(s.cacheDir, 'sandboxes')) - before;
  await Promise.all(removers.map((r) => r()));
  return {
    'one git worktree add cycle': fmtMs(one),
    '9 overlay missions, concurrent (wall)': fmtMs(wall),
    'wall / one worktree': (wall / one).toFixed(2),
    'disk added by the 9 (base already there)': `${(used / 1024).toFixed(0)} KiB`,
    'one checkout': `${(checkout / 1024 / 1024).toFixed(1)} MiB`,
  };
}

export async function runCowSandboxes(): Promise<void> {
  const probe = probeOverlay(join(tmpdir(), 'uh-bench-cow-probe'), process.env.PATH);
  if (!probe.ok) {
    console.log(`\n## Copy-on-write sandboxes\n\nskipped: ${probe.reason}`);
    return;
  }
  const files = Number((process.env.UH_BENCH_FILES ?? '5000').split(',')[0]);
  const root = join(tmpdir(), `uh-bench-cow-${process.pid}`);
  mkdirSync(root, { recursive: true });
  try {
    const repo = makeRepo(root, files, files <= 5000 ? 8 * 1024 : 1024);
    const cacheDir = join(root, 'cache');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const s: Setup = { root, cacheDir, mirror, commit, unshare: probe.unshare };
    console.log(
      `repository: ${files + 1} files; ${ROUNDS} rounds, interleaved; load: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    const t0 = performance.now();
    const first = await overlayCycle(s, true);
    const firstMs = performance.now() - t0;
    const times = await interleave(ROUNDS, {
      floor: async () => floor(repo, join(root, `wt-${++n}`)),
      'worktree cold': async () => void (await worktreeCycle(s)),
      overlay: async () => void (await overlayCycle(s)),
    });
    await first();
    const [f, w, o] = [median(times.floor!), median(times['worktree cold']!), median(times.overlay!)];
    printTable(`Copy-on-write sandboxes, ${files + 1} files (make, edit, diff, remove)`, [
      {
        floor: fmtMs(f),
        'worktree cold': fmtMs(w),
        overlay: fmtMs(o),
        'worktree / floor': (w / f).toFixed(2),
        'overlay / floor': (o / f).toFixed(2),
        'first overlay at a new base (checks the base out)': fmtMs(firstMs),
      },
    ]);
    printTable('9 concurrent overlay missions at one base', [await concurrent(s, repo)]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
