/**
 * Copy-on-write sandboxes end to end (issue 32's "Must show"), through the built CLI, on a
 * generated repository of `UH_BENCH_FILES` files (the largest size listed; default 50,000 of
 * 1 KiB, made once and cached by bench-repo.ts). Every uh process runs with
 * `UH_SANDBOX_BACKEND=$UH_BENCH_BACKEND` (default `overlay`) and the warm pool off
 * (`UH_SANDBOX_POOL_SIZE=0`); the mission is the command runtime appending a line to README.md.
 *
 *   1. Cold inline run: `uh mission run <mission> --json` at a base an earlier mission already
 *      checked out, against the floor (`git worktree add --detach`, the same edit, `git diff`,
 *      `git worktree remove --force`); `UH_BENCH_COW_ROUNDS` (default 3) rounds, interleaved,
 *      medians. Target ≤ 0.3×. The first mission (a new cache: mirror clone and base checkout) is
 *      printed apart, with its receipt's sandbox phase.
 *   2. 9 concurrent missions at that base: (a) inline, `uh batch run --runtimes command --trials 9
 *      --concurrency 9`; (b) 2 `uh worker start --concurrency 4` processes on Redis ($REDIS_URL,
 *      default 127.0.0.1:6379, a fresh `UH_REDIS_PREFIX`) and 9 `uh mission submit --wait` at once.
 *      Wall time against one `git worktree add` of the tree (the median of every add timed in
 *      this run), target ≤ 1.5×; peak disk of the cache's sandboxes dir during the run
 *      (disk-sampler.ts) against one checkout (the worktree and git's admin dir of it) plus the 9
 *      changed files, target ≤ 1.2×.
 *
 * Node processes start without NODE_EXTRA_CA_CERTS (as in codex-vs-uh09.ts: a host setting that
 * costs each node start-up, not uh's work).
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmtMs, interleave, median, printTable } from './bench-kit.js';
import { cachedRepo } from './bench-repo.js';
import { du, sampleDisk } from './disk-sampler.js';
import { runWorkerFleet } from './cow-fleet.js';
import { checkReceipt, commandManifests, missionFile, uh, type CowRun, type Receipt } from './cow-kit.js';

const ROUNDS = Number(process.env.UH_BENCH_COW_ROUNDS ?? 3);
const CONCURRENT = 9;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });

/** The floor: add, the edit, the diff, remove. Records the add's time in `run.adds`. */
function floorCycle(run: CowRun, wt: string): void {
  const t0 = performance.now();
  git(run.repo, 'worktree', 'add', '--detach', '--quiet', wt, 'HEAD');
  run.adds.push(performance.now() - t0);
  appendFileSync(join(wt, 'README.md'), 'edited\n');
  writeFileSync(`${wt}.patch`, git(wt, 'diff'));
  git(run.repo, 'worktree', 'remove', '--force', wt);
  rmSync(`${wt}.patch`, { force: true });
}

/** One checkout's disk use: a worktree of the tree with git's admin dir of it, and its edited README.md. */
function oneCheckout(run: CowRun): { bytes: number; changeBytes: number } {
  const wt = join(run.root, 'wt-size');
  const t0 = performance.now();
  git(run.repo, 'worktree', 'add', '--detach', '--quiet', wt, 'HEAD');
  run.adds.push(performance.now() - t0);
  appendFileSync(join(wt, 'README.md'), 'edited\n');
  const admin = join(run.repo, '.git', 'worktrees', 'wt-size');
  const bytes = du(wt) + du(admin);
  const changeBytes = du(join(wt, 'README.md'));
  git(run.repo, 'worktree', 'remove', '--force', wt);
  return { bytes, changeBytes };
}

/** The receipts' phases (`timings_ms`), each the median over the runs. */
const phaseText = (timings: Array<Record<string, number>>) =>
  Object.keys(timings[0] ?? {})
    .map((k) => `${k.replace(/_ms$/, '')} ${median(timings.map((t) => t[k] ?? Number.NaN)).toFixed(0)}`)
    .join(', ');

const verdict = (ratio: number, target: number) =>
  `${ratio.toFixed(2)}× (target ≤ ${target}: ${ratio <= target ? 'met' : 'NOT met'})`;

/** Part 1: the first mission (printed apart), then cold inline runs against the floor. */
async function coldInline(run: CowRun): Promise<void> {
  const stateDir = join(run.root, 'state-inline');
  const once = (id: string) => async () => {
    const r = await uh(run, ['mission', 'run', missionFile(run, id), '--json', '--state-dir', stateDir]);
    if (r.code !== 0)
      throw new Error(`uh mission run ${id}: exit ${r.code}: ${r.stderr.slice(-2000)} ${r.stdout.slice(0, 3000)}`);
    return { ms: r.ms, receipt: checkReceipt(run, JSON.parse(r.stdout) as Receipt) };
  };
  const first = await once('first')();
  let n = 0;
  const timings: Array<Record<string, number>> = [];
  const times = await interleave(ROUNDS, {
    'uh mission run (cold)': async () => void timings.push((await once(`cold-${++n}`)()).receipt.timings_ms),
    floor: async () => floorCycle(run, join(run.root, `wt-floor-${n}`)),
  });
  const [cold, floor] = [median(times['uh mission run (cold)']!), median(times.floor!)];
  printTable(`Cold inline run, ${run.backend} backend, vs the git worktree floor (${ROUNDS} rounds, medians)`, [
    {
      'uh mission run (cold, base already checked out)': fmtMs(cold),
      'floor (worktree add + edit + diff + remove)': fmtMs(floor),
      'cold / floor': (cold / floor).toFixed(2),
      'receipt phases (ms, medians)': phaseText(timings),
      'first mission at a new base (new cache: mirror clone + base checkout)': `${fmtMs(first.ms)} (sandbox phase ${first.receipt.timings_ms.sandbox_ms ?? '?'} ms)`,
    },
  ]);
  console.log(`\ncold inline run / floor: ${verdict(cold / floor, 0.3)}`);
}

/** A concurrent run's wall time (ms), and the peak disk of the sandboxes dir (bytes) over its samples. */
type Concurrent = { wall: number; peak: number; samples: number };

const RUNTIMES = ['cmd-a', 'cmd-b', 'cmd-c'];
const TRIALS = CONCURRENT / RUNTIMES.length;

/** Part 2a: `uh batch run` of 3 runtimes (the command runtime under three ids) × 3 trials, all at once, inline. */
async function inlineBatch(run: CowRun): Promise<Concurrent> {
  const stateDir = join(run.root, 'state-batch');
  commandManifests(stateDir, RUNTIMES);
  const file = missionFile(run, 'batch-9', RUNTIMES);
  const sampler = sampleDisk(join(run.cacheDir, 'sandboxes'));
  const r = await uh(run, [
    ...['batch', 'run', file, '--runtimes', RUNTIMES.join(','), '--trials', String(TRIALS)],
    ...['--concurrency', String(CONCURRENT), '--json', '--state-dir', stateDir],
  ]);
  const disk = await sampler.stop();
  if (r.code !== 0)
    throw new Error(`uh batch run: exit ${r.code}: ${r.stderr.slice(-2000)} ${r.stdout.slice(0, 2000)}`);
  for (const runtime of RUNTIMES)
    for (let t = 1; t <= TRIALS; t++) {
      const path = join(stateDir, 'operations', `batch-9.${runtime}.t${t}`, 'receipt.json');
      checkReceipt(run, JSON.parse(readFileSync(path, 'utf8')) as Receipt);
    }
  return { wall: r.ms, ...disk };
}

/** Part 2: the 9 concurrent missions, inline and on two workers, against one checkout. */
async function concurrent(run: CowRun): Promise<void> {
  const checkout = oneCheckout(run);
  const rows: Array<Record<string, string | number>> = [];
  const expected = checkout.bytes + CONCURRENT * checkout.changeBytes;
  const row = (what: string, m: Concurrent) => {
    const add = median(run.adds);
    rows.push({
      [`${CONCURRENT} missions at one base`]: what,
      wall: fmtMs(m.wall),
      'one git worktree add (median in this run)': fmtMs(add),
      'wall / add': verdict(m.wall / add, 1.5),
      'peak disk of sandboxes/ (samples)': `${(m.peak / 2 ** 20).toFixed(1)} MiB (${m.samples})`,
      'one checkout + the changes': `${(expected / 2 ** 20).toFixed(1)} MiB`,
      'disk / (checkout + changes)': verdict(m.peak / expected, 1.2),
    });
  };
  row(
    `inline uh batch run (${RUNTIMES.length} runtimes × ${TRIALS} trials, --concurrency ${CONCURRENT})`,
    await inlineBatch(run),
  );
  const fleet = await runWorkerFleet(run, CONCURRENT);
  if (typeof fleet === 'string') console.log(`\n2 workers × concurrency 4: skipped (${fleet})`);
  else row(`2 uh worker start × --concurrency 4, ${CONCURRENT} uh mission submit --wait`, fleet);
  printTable(
    `${CONCURRENT} concurrent missions, ${run.backend} backend (git worktree adds timed: ${run.adds.length})`,
    rows,
  );
}

/** `UH_BENCH_FILES`: the largest size listed (default 50,000). */
function benchFiles(): number {
  const sizes = (process.env.UH_BENCH_FILES ?? '50000').split(',').map((v) => Number(v.trim()));
  return Math.max(...sizes.filter((v) => Number.isInteger(v) && v > 0), 1);
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

export async function runCowMissions(): Promise<void> {
  const files = benchFiles();
  const backend = process.env.UH_BENCH_BACKEND ?? 'overlay';
  console.log(`\n# Copy-on-write sandboxes, missions through the CLI (${backend} backend)\n`);
  const repo = cachedRepo(files, files <= 5000 ? 8 * 1024 : 1024);
  const root = join(tmpdir(), `uh-bench-cowm-${process.pid}`);
  mkdirSync(root, { recursive: true });
  const { NODE_EXTRA_CA_CERTS: _, ...host } = process.env;
  const cacheDir = join(root, 'cache');
  const env = {
    ...host,
    UH_CACHE_DIR: cacheDir,
    UH_LOG_LEVEL: 'silent',
    UH_SANDBOX_POOL_SIZE: '0',
    UH_SANDBOX_BACKEND: backend,
  };
  const run: CowRun = { root, repo, cacheDir, backend, env, adds: [] };
  try {
    console.log(`load before: ${load()} (${new Date().toISOString()})`);
    await coldInline(run);
    console.log(`load: ${load()}`);
    await concurrent(run);
    console.log(`load after: ${load()}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
    git(repo, 'worktree', 'prune'); // the floor's worktrees, should a cycle have failed half-way
  }
}
