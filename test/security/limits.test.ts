/**
 * Per-mission limits (issue 34): a fork bomb, a memory hog, a `/dev/shm` fill, a worktree too big
 * and one with too many entries each end as `failed` with `raw: limit_exceeded:<limit>` and the
 * receipt's `limits.exceeded` naming it, nothing of the attack outlives the run, and the next
 * mission on the same host (the same worker process, through a worker) is verified. Small
 * ceilings come from the host's `UH_LIMIT_*`; a mission's `sandbox.limits` lowers them, never
 * raises them.
 *
 * Inline isolated, inline with UH_ISOLATION=off and through a worker (isolated), as this process's
 * user (root here: processes held by the watcher alone); then, as the non-root deployment user,
 * the fork bomb under RLIMIT_NPROC. Unisolated, `/dev/shm` is the host's and no limit holds it
 * (the receipt says `none`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { fleetTable, firstMission, runScript, startFleet, stopFleet, type Fleet as FleetOf } from '../support/fleet.js';

type Mode = 'inline' | 'worker';
type Isolation = 'auto' | 'off';
const dirs: string[] = [];
let redis: TestRedis;
let counter = 0;
const MiB = 1024 * 1024;

interface Fleet {
  mode: Mode;
  isolation: Isolation;
  repo: string;
  cacheDir: string;
  home: string;
  prefix: string;
  worker: WorkerProcess | null;
}

/** The host's small ceilings: every limit reachable in well under a second. */
const LIMITS = {
  UH_LIMIT_PROCESSES: '64',
  UH_LIMIT_MEMORY_BYTES: String(160 * MiB),
  UH_LIMIT_SHM_BYTES: String(2 * MiB), // below the byte limit, which RLIMIT_FSIZE puts on every file
  UH_LIMIT_WORKTREE_BYTES: String(4 * MiB),
  UH_LIMIT_WORKTREE_FILES: '400',
};

const env = (f: Fleet): Record<string, string> => ({
  UH_CACHE_DIR: f.cacheDir,
  UH_ISOLATION: f.isolation,
  HOME: f.home,
  XDG_CONFIG_HOME: join(f.home, '.config'),
  REDIS_URL: redis.url,
  UH_REDIS_PREFIX: f.prefix,
  ...LIMITS,
});

async function run(f: Fleet, script: string, limits?: Record<string, number>, check = 'sh test.sh'): Promise<any> {
  const body = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-limits',
    operation_id: `op-limits-${process.pid}-${++counter}`,
    title: 'limits',
    objective: 'take more than the mission is given',
    repository: { url: f.repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['/bin/sh', '-c', script], kill_grace_ms: 500 } },
    scope: { allowed_change_globs: ['src/**'] },
    verification: [{ name: 'tests', argv: ['sh', '-c', check], timeout_seconds: 30 }],
    timeout_seconds: 60,
    ...(limits ? { sandbox: { limits } } : {}),
  };
  const dir = tempDir('uh-limits-mission-');
  const state = tempDir('uh-limits-state-');
  dirs.push(dir, state);
  writeFileSync(join(dir, 'mission.yaml'), stringify(body));
  const verb = f.mode === 'inline' ? ['run'] : ['submit', '--wait'];
  const args = ['mission', ...verb, join(dir, 'mission.yaml'), '--json', '--state-dir', state];
  const result = await runCli(args, { cwd: f.repo, env: env(f) });
  try {
    const out = JSON.parse(result.stdout);
    return out.receipt ?? out;
  } catch {
    throw new Error(`uh exited ${result.code}: ${result.stderr}\n${result.stdout}`);
  }
}

/** Processes whose command line holds `marker` (what an attack left running). */
function survivors(marker: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(marker) && !l.includes('ps -eo'));
}

/** Poll until nothing runs with `marker` (a SIGKILLed group is reaped within moments), or fail. */
async function expectNoSurvivors(marker: string): Promise<void> {
  const deadline = Date.now() + 5000;
  let left = survivors(marker);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = survivors(marker);
  }
  expect(left).toEqual([]);
}

beforeAll(async () => {
  redis = await startTestRedis('limits');
});

afterAll(async () => {
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

const FLEETS: Array<[Mode, Isolation]> = [
  ['inline', 'auto'],
  ['inline', 'off'],
  ['worker', 'auto'],
];

describe.each(FLEETS)('limits (%s, UH_ISOLATION=%s)', (mode, isolation) => {
  let f: Fleet;

  beforeAll(async () => {
    const repo = makeRepo({ 'README.md': '# demo\n', 'src/app.txt': 'v1\n', 'test.sh': 'exit 0\n' });
    const cacheDir = tempDir('uh-limits-cache-');
    const home = tempDir('uh-limits-home-');
    dirs.push(repo, cacheDir, home);
    f = { mode, isolation, repo, cacheDir, home, prefix: redis.prefix(`limits-${++counter}`), worker: null };
    if (mode === 'worker') {
      const state = tempDir('uh-limits-wstate-');
      dirs.push(state);
      f.worker = await startWorker(['--state-dir', state, '--runtime', 'command', '--concurrency', '1'], {
        cwd: repo,
        env: { ...env(f), UH_LOG_LEVEL: 'warn' },
      });
    }
  }, 60_000);

  afterAll(async () => {
    await f?.worker?.stop('SIGKILL');
  });

  /** The attack fails naming `limit`, leaves nothing running, and the next mission is verified. */
  const expectRefused = async (receipt: any, limit: string, marker?: string): Promise<void> => {
    expect(receipt.status).toBe('failed');
    expect(receipt.outcome.raw).toBe(`limit_exceeded:${limit}`);
    expect(receipt.outcome.message).toContain(`${limit} limit`);
    expect(receipt.limits.exceeded.limit).toBe(limit);
    expect(receipt.exit_code).toBe(1);
    if (marker) await expectNoSurvivors(marker);
    const next = await run(f, 'echo ok > src/ok.txt');
    expect(next.verdict).toBe('verified');
    expect(next.limits.exceeded).toBeNull();
    if (f.worker) expect(next.worker.pid).toBe(f.worker.pid);
  };

  it('records the limits in force and how each holds', async () => {
    const receipt = await run(f, 'echo ok > src/ok.txt', { processes: 10_000, worktree_files: 300 });
    expect(receipt.verdict).toBe('verified');
    // The host's ceiling wins over a higher request; a lower one lowers it.
    expect(receipt.limits).toMatchObject({ backend: 'rlimit', processes: 64, worktree_files: 300 });
    expect(receipt.limits.worktree.files).toBeGreaterThan(0);
    expect(receipt.limits.held.shm).toBe(isolation === 'auto' ? 'tmpfs' : 'none');
    expect(receipt.limits.held.memory).toBe('rlimit+watcher');
  }, 60_000);

  it('a fork bomb is stopped at the processes limit', async () => {
    const marker = `uhbomb${process.pid}x${counter}`;
    const bomb = `i=0; while [ $i -lt 5000 ]; do sh -c 'sleep 30; : ${marker}' & i=$((i+1)); done; wait`;
    const receipt = await run(f, bomb);
    await expectRefused(receipt, 'processes', marker);
    expect(receipt.limits.exceeded.observed).toBeGreaterThanOrEqual(64);
  }, 90_000);

  it('a check that forks without end is stopped at the processes limit too', async () => {
    const marker = `uhcbomb${process.pid}x${counter}`;
    const bomb = `i=0; while [ $i -lt 5000 ]; do sh -c 'sleep 30; : ${marker}' & i=$((i+1)); done; wait`;
    const receipt = await run(f, 'echo ok > src/ok.txt', undefined, bomb);
    expect(receipt.checks[0].exit_code).not.toBe(0);
    await expectRefused(receipt, 'processes', marker);
  }, 90_000);

  it('a memory hog is killed at the memory limit', async () => {
    // It holds what it got, whether the watcher or RLIMIT_DATA (twice the limit) stops its growth first.
    const hog = `const a=[];setInterval(()=>{try{if(a.length<200)a.push(Buffer.alloc(8<<20,1))}catch{}},10)`;
    const receipt = await run(f, `${process.execPath} -e '${hog}'`);
    await expectRefused(receipt, 'memory');
    expect(receipt.limits.exceeded.observed).toBeGreaterThanOrEqual(160 * MiB);
  }, 90_000);

  if (isolation === 'auto') {
    it('a /dev/shm fill is refused at the sandbox own /dev/shm size, the host /dev/shm untouched', async () => {
      const name = `uh-limits-shm-${process.pid}`;
      const receipt = await run(f, `dd if=/dev/zero of=/dev/shm/${name} bs=1M count=64 2>/dev/null; sleep 30`);
      await expectRefused(receipt, 'shm');
      expect(existsSync(`/dev/shm/${name}`)).toBe(false);
    }, 90_000);
  }

  it('a worktree over its byte limit fails naming it, and is never diffed', async () => {
    const receipt = await run(f, 'head -c 3000000 /dev/zero > src/a.bin; head -c 3000000 /dev/zero > src/b.bin');
    expect(receipt.changed_files).toEqual([]);
    expect(receipt.limits.worktree.bytes).toBeGreaterThan(4 * MiB);
    await expectRefused(receipt, 'worktree_bytes');
  }, 90_000);

  it('a single file stops at the byte limit (RLIMIT_FSIZE), and the run fails naming it', async () => {
    const receipt = await run(f, 'head -c 6000000 /dev/zero > src/one.bin; echo $? > src/status.txt');
    // The file stopped at 4 MiB (without the rlimit: 6 MB), the other files' bytes put the tree over.
    expect(receipt.limits.worktree.bytes).toBeLessThan(4 * MiB + 4096);
    await expectRefused(receipt, 'worktree_bytes');
  }, 90_000);

  it('a worktree with too many entries fails naming the limit', async () => {
    const receipt = await run(f, 'mkdir -p src/many && cd src/many && seq 1 1000 | xargs touch');
    expect(receipt.limits.worktree.files).toBeGreaterThan(400);
    await expectRefused(receipt, 'worktree_files');
  }, 90_000);
});

/**
 * As the deployment's non-root user (test/support/fleet.ts; not root: the current user), isolated:
 * RLIMIT_NPROC counts the sandbox's own user namespace, so a fork bomb that keeps retrying holds
 * at the limit exactly (the watcher then names it), and the limit comes from the mission's
 * `sandbox.limits`, lowering the host's default.
 */
const CHECKED = { verification: [{ name: 'tests', argv: ['true'], timeout_seconds: 30 }] };

describe.each(fleetTable(['inline', 'worker'], ['auto']).filter(([, , user]) => user !== 'root'))(
  'limits (%s, UH_ISOLATION=%s, as %s)',
  (mode, isolation, user) => {
    let f: FleetOf;
    beforeAll(async () => {
      f = await startFleet({ mode, isolation, user, redis, tag: 'limits', files: { 'src/app.txt': 'v1\n' } });
      await firstMission(f, CHECKED);
    }, 60_000);
    afterAll(() => stopFleet(f));

    it('a fork bomb holds at the processes limit (RLIMIT_NPROC in the namespace), named; the next mission is verified', async () => {
      const marker = `uhnbomb${process.pid}x${counter++}`;
      const bomb = `const {spawn}=require("child_process");setInterval(()=>{for(let k=0;k<20;k++){try{spawn("sh",["-c","sleep 30; : ${marker}"]).on("error",()=>{})}catch{}}},5)`;
      const receipt = await runScript(f, `${process.execPath} -e '${bomb}'`, {
        sandbox: { limits: { processes: 64 } },
      });
      expect(receipt.limits.held.processes).toBe('rlimit+watcher');
      expect(receipt.outcome.raw).toBe('limit_exceeded:processes');
      // The sandbox's tasks never pass 64; the watcher also counts the outer bwrap.
      expect(receipt.limits.exceeded.observed).toBeLessThanOrEqual(65);
      await expectNoSurvivors(marker);
      const next = await runScript(f, 'echo ok > src/ok.txt', CHECKED);
      expect(next.verdict).toBe('verified');
      if (f.worker) expect(next.worker.pid).toBe(f.worker.pid);
    }, 90_000);
  },
);
