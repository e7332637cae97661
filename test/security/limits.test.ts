/**
 * Per-mission limits (issue 34): a fork bomb (the agent's and a check's), a memory hog, a
 * `/dev/shm` fill, a worktree too big and one with too many entries each end as `failed` with
 * `raw: limit_exceeded:<limit>` and the receipt's `limits.exceeded` naming it, nothing of the
 * attack outlives the run (no process, no uh cgroup), and the next mission on the same host (the
 * same worker process, through a worker) is verified. Small ceilings come from the host's
 * `UH_LIMIT_*`; a mission's `sandbox.limits` lowers them, never raises them.
 *
 * Every limit runs inline isolated, inline with UH_ISOLATION=off and through a worker (isolated)
 * as this process's user, and isolated (inline and through a worker) as the deployment's non-root
 * user `uh` (test/support/fleet.ts). Which backend holds processes and memory depends on the user:
 * - root on a host with writable cgroups (this one: cgroup v1 pids+memory, `uh doctor`): the
 *   phase's cgroup, so the fork bomb is refused by the kernel's pids controller (the receipt's
 *   `kernel.forks_refused`, `exceeded.by: cgroup`) and the hog is OOM-killed at the limit
 *   (`kernel.oom_kills`), root or not;
 * - `uh` (no cgroup delegated to it): rlimits, RLIMIT_NPROC inside the sandbox's user namespace
 *   and the watcher (`exceeded.by: watcher`).
 * Unisolated, `/dev/shm` is the host's and no limit holds it (the receipt says `none`).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseLimitBackend } from '../../src/shared/process/cgroup-probe.js';
import { cgroupsOf } from '../../src/shared/process/mission-cgroup.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import {
  DEPLOY_USER,
  fleetTable,
  firstMission,
  runScript,
  startFleet,
  stopFleet,
  type Fleet,
  type Isolation,
  type Mode,
} from '../support/fleet.js';

let redis: TestRedis;
let counter = 0;
const MiB = 1024 * 1024;

/** The host's small ceilings: every limit reachable in well under a second. */
const LIMITS = {
  UH_LIMIT_PROCESSES: '64',
  UH_LIMIT_MEMORY_BYTES: String(160 * MiB),
  UH_LIMIT_SHM_BYTES: String(2 * MiB), // below the byte limit, which RLIMIT_FSIZE puts on every file
  UH_LIMIT_WORKTREE_BYTES: String(4 * MiB),
  UH_LIMIT_WORKTREE_FILES: '400',
};

/**
 * The backend uh picks as `user`: this process's own probe for its own user; the deployment user
 * `uh`, made by the fixture, has no cgroup delegated, so rlimits.
 */
const backendOf = (user: string): string => (user === DEPLOY_USER ? 'rlimit' : chooseLimitBackend('auto').kind);

/** A bomb that keeps forking whatever the kernel refuses (a shell would give up at the first EAGAIN). */
const bombOf = (marker: string): string => {
  const js = `const {spawn}=require("child_process");setInterval(()=>{for(let k=0;k<20;k++){try{spawn("sh",["-c","sleep 30; : ${marker}"]).on("error",()=>{})}catch{}}},5)`;
  return `${process.execPath} -e '${js}'`;
};

const checked = (argv: string[] = ['true']) => ({ verification: [{ name: 'tests', argv, timeout_seconds: 30 }] });

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
});

/** As this user: inline isolated and not, through a worker; as `uh`: isolated, inline and through a worker. */
const ROWS = fleetTable(['inline', 'worker']).filter(
  ([mode, isolation, user]) => isolation === 'auto' || (mode === 'inline' && user !== DEPLOY_USER),
);

describe.each(ROWS)('limits (%s, UH_ISOLATION=%s, as %s)', (mode: Mode, isolation: Isolation, user: string) => {
  let f: Fleet;
  const backend = backendOf(user);
  const cgroup = backend.startsWith('cgroup');

  beforeAll(async () => {
    f = await startFleet({
      mode,
      isolation,
      user,
      redis,
      tag: 'limits',
      files: { 'README.md': '# demo\n', 'src/app.txt': 'v1\n', 'test.sh': 'exit 0\n' },
      env: LIMITS,
    });
    await firstMission(f, checked());
  }, 60_000);

  afterAll(() => stopFleet(f));

  const run = (script: string, patch: Record<string, unknown> = {}) =>
    runScript(f, script, { scope: { allowed_change_globs: ['src/**'] }, ...checked(['sh', 'test.sh']), ...patch });

  /** The attack fails naming `limit`, leaves nothing running and no cgroup, and the next mission is verified. */
  const expectRefused = async (receipt: any, limit: string, marker?: string): Promise<void> => {
    expect(receipt.status).toBe('failed');
    expect(receipt.outcome.raw).toBe(`limit_exceeded:${limit}`);
    expect(receipt.outcome.message).toContain(`${limit} limit`);
    expect(receipt.limits.exceeded.limit).toBe(limit);
    expect(receipt.exit_code).toBe(1);
    if (marker) await expectNoSurvivors(marker);
    expect(cgroupsOf(receipt.operation_id)).toEqual([]);
    const next = await run('echo ok > src/ok.txt');
    // On a failure, the receipt's outcome says which step failed and why.
    expect(next.verdict, JSON.stringify({ status: next.status, outcome: next.outcome, scope: next.scope })).toBe(
      'verified',
    );
    expect(next.limits.exceeded).toBeNull();
    if (f.worker) expect(next.worker.pid).toBe(f.worker.pid);
  };

  it('records the limits in force, the backend and how each holds', async () => {
    const receipt = await run('echo ok > src/ok.txt', {
      sandbox: { limits: { processes: 10_000, worktree_files: 300 } },
    });
    expect(receipt.verdict).toBe('verified');
    // The host's ceiling wins over a higher request; a lower one lowers it.
    expect(receipt.limits).toMatchObject({ backend, processes: 64, worktree_files: 300 });
    expect(receipt.limits.worktree.files).toBeGreaterThan(0);
    expect(receipt.limits.held.shm).toBe(isolation === 'auto' ? 'tmpfs' : 'none');
    if (cgroup) {
      expect(receipt.limits.backend_reason).toMatch(/^cgroup v[12] /);
      expect(receipt.limits.held).toMatchObject({ processes: 'cgroup', memory: 'cgroup' });
      expect(receipt.limits.kernel).toEqual({ forks_refused: 0, oom_kills: 0 });
    } else {
      expect(receipt.limits.backend_reason).toMatch(/no delegation: rlimits/);
      expect(receipt.limits.held.memory).toBe('rlimit+watcher');
      expect(receipt.limits.kernel).toBeUndefined();
    }
    expect(cgroupsOf(receipt.operation_id)).toEqual([]);
  }, 60_000);

  it('a fork bomb is stopped at the processes limit', async () => {
    const marker = `uhbomb${process.pid}x${++counter}`;
    const receipt = await run(bombOf(marker));
    if (cgroup) {
      // The kernel's pids controller refused the forks (root included): not a sample.
      expect(receipt.limits.held.processes).toBe('cgroup');
      expect(receipt.limits.exceeded.by).toBe('cgroup');
      expect(receipt.limits.kernel.forks_refused).toBeGreaterThan(0);
    } else if (user === DEPLOY_USER) {
      // RLIMIT_NPROC in the sandbox's namespace holds the tasks at 64; the watcher (counting the outer bwrap) names it.
      expect(receipt.limits.held.processes).toBe('rlimit+watcher');
      expect(receipt.limits.exceeded.observed).toBeLessThanOrEqual(65);
    }
    expect(receipt.limits.exceeded.observed).toBeGreaterThanOrEqual(64);
    await expectRefused(receipt, 'processes', marker);
  }, 90_000);

  it('a check that forks without end is stopped at the processes limit too', async () => {
    const marker = `uhcbomb${process.pid}x${++counter}`;
    const receipt = await run('echo ok > src/ok.txt', checked(['sh', '-c', bombOf(marker)]));
    expect(receipt.checks[0].passed).toBe(false);
    if (cgroup) {
      expect(receipt.limits.exceeded.by).toBe('cgroup');
      expect(receipt.limits.kernel.forks_refused).toBeGreaterThan(0);
    }
    await expectRefused(receipt, 'processes', marker);
  }, 90_000);

  it('a memory hog is stopped at the memory limit', async () => {
    // It holds what it got, whether the kernel, the watcher or RLIMIT_DATA (twice the limit) stops its growth first.
    const hog = `const a=[];setInterval(()=>{try{if(a.length<200)a.push(Buffer.alloc(8<<20,1))}catch{}},10)`;
    const receipt = await run(`${process.execPath} -e '${hog}'`);
    if (cgroup) {
      // OOM-killed by the kernel at the cgroup's limit.
      expect(receipt.limits.exceeded.by).toBe('cgroup');
      expect(receipt.limits.kernel.oom_kills).toBeGreaterThan(0);
    } else expect(receipt.limits.exceeded.by).toBe('watcher');
    expect(receipt.limits.exceeded.observed).toBeGreaterThanOrEqual(160 * MiB);
    await expectRefused(receipt, 'memory');
  }, 90_000);

  if (isolation === 'auto') {
    it('a /dev/shm fill is refused at the sandbox own /dev/shm size, the host /dev/shm untouched', async () => {
      const name = `uh-limits-shm-${process.pid}-${++counter}`;
      const receipt = await run(`dd if=/dev/zero of=/dev/shm/${name} bs=1M count=64 2>/dev/null; sleep 30`);
      await expectRefused(receipt, 'shm');
      expect(existsSync(`/dev/shm/${name}`)).toBe(false);
    }, 90_000);
  }

  it('a worktree over its byte limit fails naming it, and is never diffed', async () => {
    const receipt = await run('head -c 3000000 /dev/zero > src/a.bin; head -c 3000000 /dev/zero > src/b.bin');
    expect(receipt.changed_files).toEqual([]);
    expect(receipt.limits.worktree.bytes).toBeGreaterThan(4 * MiB);
    await expectRefused(receipt, 'worktree_bytes');
  }, 90_000);

  it('a single file stops at the byte limit (RLIMIT_FSIZE), and the run fails naming it', async () => {
    const receipt = await run('head -c 6000000 /dev/zero > src/one.bin; echo $? > src/status.txt');
    // The file stopped at 4 MiB (without the rlimit: 6 MB), the other files' bytes put the tree over.
    expect(receipt.limits.worktree.bytes).toBeLessThan(4 * MiB + 4096);
    await expectRefused(receipt, 'worktree_bytes');
  }, 90_000);

  it('a worktree with too many entries fails naming the limit', async () => {
    const receipt = await run('mkdir -p src/many && cd src/many && seq 1 1000 | xargs touch');
    expect(receipt.limits.worktree.files).toBeGreaterThan(400);
    await expectRefused(receipt, 'worktree_files');
  }, 90_000);
});
