/**
 * The phase cgroups of the limits backend (shared/process/mission-cgroup.ts), on the real kernel:
 * - the cgroup v2 code path, on every cgroup2 mount where this process may make a child of its own
 *   cgroup (on this host /sys/fs/cgroup/unified, a hybrid host's v2 hierarchy with only the hugetlb
 *   controller: the pids and memory controllers are not available there, so this tests placement,
 *   `cgroup.kill` and removal, not pids.max or memory.max; the limits themselves are tested on the
 *   v1 backend in limits.test.ts): a child that joins is in the cgroup before it execs, with all it
 *   forks (a `setsid` daemon included); closing kills them all at once and removes the cgroup;
 * - the cgroup v1 path the same way, where this process may write the pids and memory hierarchies;
 * - a crashed owner's cgroups (uh's name, a dead pid) are emptied and removed by `uh gc`, their
 *   processes killed, and a live owner's are left alone; and a worker SIGKILLed mid-mission leaves
 *   its agent's cgroup with the agent in it, which the next worker ends (its owner watch, the
 *   operation still running) or sweeps.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cgroupMounts,
  chooseLimitBackend,
  ownCgroups,
  type CgroupBackend,
} from '../../src/shared/process/cgroup-probe.js';
import {
  cgroupParents,
  cgroupScope,
  createMissionCgroup,
  type MissionCgroup,
} from '../../src/shared/process/mission-cgroup.js';
import { cgroupsOf } from '../../src/shared/process/mission-cgroup.js';
import { runCli } from '../support/cli.js';
import { commandMission, fleetEnv, startFleet, stopFleet } from '../support/fleet.js';
import { startTestRedis } from '../support/redis.js';
import { startWorker } from '../support/worker-process.js';
import { stringify } from 'yaml';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

/** Can this process make (and remove) a child of `dir`? */
function writable(dir: string): boolean {
  const probe = join(dir, `uh-test-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return true;
  } catch {
    return false;
  }
}

const own = ownCgroups();
const mounts = cgroupMounts();
/** The v2 parents here: uh's own cgroup in each cgroup2 mount we may write, with whatever controllers it has. */
const V2: Array<[string, CgroupBackend]> = mounts.v2
  .map((m) => join(m, own.get('') ?? '/').replace(/(.)\/$/, '$1'))
  .filter(writable)
  .map((parent) => [parent, { kind: 'cgroup-v2', parent, controllers: [], reason: 'test' }]);
const v1 = chooseLimitBackend('auto');
const V1: Array<[string, CgroupBackend]> = v1.kind === 'cgroup-v1' ? [[v1.pids, v1]] : [];

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(20);
  }
}
const aliveNow = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    // A zombie (killed, not yet reaped by its parent) is gone for our purpose.
    return !/^\d+ \([^)]*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/** Start `sh` through the cgroup's join: it forks a sleeper and a setsid daemon, prints their pids. */
function startJoined(cgroup: MissionCgroup, pidsFile: string) {
  const script = `sleep 60 & echo $! > ${pidsFile}; setsid sleep 60 & echo $! >> ${pidsFile}; cat /proc/self/cgroup > ${pidsFile}.tmp && mv ${pidsFile}.tmp ${pidsFile}.cg; wait`;
  return spawn(cgroup.join[0] as string, [...cgroup.join.slice(1), '/bin/sh', '-c', script], { stdio: 'ignore' });
}

describe.each([...V2, ...V1])('a phase cgroup under %s', (parent, backend) => {
  it('holds the child and all it forks from before exec, and closing kills them all and removes it', async () => {
    const work = tempDir('uh-cgroups-');
    dirs.push(work);
    const cgroup = createMissionCgroup(
      backend,
      { phase: 'agent', operationId: `op-cgt-${process.pid}` },
      {
        processes: 64,
        memory_bytes: 256 * 1024 * 1024,
      },
    );
    const leaf = cgroup.dirs[0] as string;
    expect(leaf.startsWith(`${parent}/uh-${process.pid}-`)).toBe(true);
    const pidsFile = join(work, 'pids');
    const child = startJoined(cgroup, pidsFile);
    await until('the sleepers', () => existsSync(`${pidsFile}.cg`));
    const forked = readFileSync(pidsFile, 'utf8').trim().split('\n').map(Number);
    // The shell saw itself in the cgroup (it joined before exec), and every process is listed in it.
    const name = basename(leaf);
    const expected =
      backend.kind === 'cgroup-v2'
        ? `0::${join(own.get('') ?? '/', name)}`
        : `:pids:${join(own.get('pids') ?? '/', name)}`;
    expect(readFileSync(`${pidsFile}.cg`, 'utf8')).toContain(expected);
    // v1 joins by its thread (`0` to `tasks`): the memory hierarchy holds it as well.
    if (backend.kind === 'cgroup-v1')
      expect(readFileSync(`${pidsFile}.cg`, 'utf8')).toContain(`:memory:${join(own.get('memory') ?? '/', name)}`);
    await until('all three in the cgroup', () =>
      [child.pid as number, ...forked].every((p) => cgroup.pids().includes(p)),
    );
    // v2: the kernel's cgroup.kill (the whole cgroup at once); v1: SIGKILL per pid until none is left.
    expect(existsSync(join(leaf, 'cgroup.kill'))).toBe(backend.kind === 'cgroup-v2');
    const events = await cgroup.close();
    expect(events).toMatchObject({ forksRefused: 0, oomKills: 0 });
    // All dead, the setsid daemon (out of the process group) too, and the cgroup gone.
    await until('the processes to die', () => forked.every((p) => !aliveNow(p)));
    for (const dir of cgroup.dirs) expect(existsSync(dir)).toBe(false);
  }, 30_000);

  it('a join that cannot write the cgroup never runs the program (exit 125)', async () => {
    const cgroup = createMissionCgroup(
      backend,
      { phase: 'agent', operationId: `op-cgt-gone-${process.pid}` },
      {
        processes: 64,
        memory_bytes: 256 * 1024 * 1024,
      },
    );
    const join_ = [...cgroup.join];
    await cgroup.close();
    const missing = join_.map((a) =>
      /\/(cgroup\.procs|tasks)$/.test(a) ? join(a, '..', '..', 'uh-missing', basename(a)) : a,
    );
    const r = spawnSync(missing[0] as string, [...missing.slice(1), '/bin/sh', '-c', 'echo ran'], { encoding: 'utf8' });
    expect(r.status).toBe(125);
    expect(r.stdout).toBe('');
  });

  it('its join sets the per-file byte limit: a write past it fails, and a write within it does not', async () => {
    const work = tempDir('uh-cgroups-fsize-');
    dirs.push(work);
    const cgroup = createMissionCgroup(
      backend,
      { phase: 'agent', operationId: `op-cgt-fsize-${process.pid}` },
      { processes: 64, memory_bytes: 256 * 1024 * 1024, worktree_bytes: 64 * 1024 },
    );
    try {
      // dd writes 64 KiB, then 64 KiB + 1 block: the kernel refuses the part past the limit (EFBIG).
      const write = (name: string, blocks: number) =>
        spawnSync(
          cgroup.join[0] as string,
          [
            ...cgroup.join.slice(1),
            '/bin/sh',
            '-c',
            `trap '' XFSZ; dd if=/dev/zero of=${join(work, name)} bs=1024 count=${blocks} 2>&1; ulimit -f`,
          ],
          { encoding: 'utf8' },
        );
      const within = write('within', 64);
      expect(within.status).toBe(0);
      expect(within.stdout.trim().split('\n').pop()).toBe('128'); // 512-byte blocks
      expect(statSync(join(work, 'within')).size).toBe(64 * 1024);
      const past = write('past', 65);
      expect(past.stdout).toMatch(/File too large/);
      expect(statSync(join(work, 'past')).size).toBe(64 * 1024);
    } finally {
      await cgroup.close();
    }
  });
});

describe.each(
  cgroupParents()
    .filter(writable)
    .map((p) => [p]),
)('uh gc under %s', (parent) => {
  it("removes a crashed owner's cgroups of its cache, killing what is left in them, and leaves a live owner's and another cache's alone", async () => {
    const dead = spawnSync('true').pid as number;
    const cache = tempDir('uh-cgroups-cache-');
    const state = tempDir('uh-cgroups-state-');
    dirs.push(cache, state);
    const stale = join(parent, `uh-${dead}-1-agent-op-cgt-stale-${process.pid}`);
    const own = join(parent, `uh-${dead}-2-agent.${cgroupScope(cache)}-op-cgt-own-${process.pid}`);
    // Another deployment's orphan on this host: its own owner watch ends it and says so in its receipt.
    const other = join(parent, `uh-${dead}-3-agent.${cgroupScope('/elsewhere')}-op-cgt-other-${process.pid}`);
    const live = join(parent, `uh-${process.pid}-999-agent-op-cgt-live`);
    for (const dir of [stale, own, other, live]) mkdirSync(dir);
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    writeFileSync(join(stale, 'cgroup.procs'), String(sleeper.pid));
    try {
      const result = await runCli(['gc', '--json', '--state-dir', state], {
        cwd: state,
        env: { UH_CACHE_DIR: cache, REDIS_URL: '' },
      });
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout).cgroups).toEqual(expect.arrayContaining([stale, own]));
      expect(existsSync(stale)).toBe(false);
      expect(existsSync(own)).toBe(false);
      expect(existsSync(other)).toBe(true);
      await until('the stale cgroup process to die', () => !aliveNow(sleeper.pid as number));
      expect(existsSync(live)).toBe(true);
    } finally {
      sleeper.kill('SIGKILL');
      rmdirSync(live);
      for (const dir of [stale, own, other]) if (existsSync(dir)) rmdirSync(dir);
    }
  }, 30_000);
});

describe.each(V1.map(([parent]) => [parent]))('a crashed worker (cgroup v1 under %s)', () => {
  it("leaves its agent's cgroup, agent inside; the next worker kills the agent and removes the cgroup at start", async () => {
    const redis = await startTestRedis('cgcrash');
    // Unisolated: no bwrap --die-with-parent, so the agent outlives its worker (the crash path).
    const f = await startFleet({
      mode: 'worker',
      isolation: 'off',
      user: 'root',
      redis,
      tag: 'cgcrash',
      files: { 'a.txt': '1\n' },
    });
    const marker = `uhcrash${process.pid}`;
    const mission = commandMission(f, `sleep 60; : ${marker}`);
    const id = String(mission.operation_id);
    const file = join(f.tempDir('uh-cgcrash-m-'), 'mission.yaml');
    writeFileSync(file, stringify(mission));
    let next: Awaited<ReturnType<typeof startWorker>> | null = null;
    try {
      expect((await runCli(['mission', 'submit', file, '--json'], { cwd: f.repo, env: fleetEnv(f) })).code).toBe(0);
      await until(
        'the agent in its cgroup',
        () => cgroupsOf(id).some((d) => read(join(d, 'cgroup.procs')).trim() !== ''),
        30_000,
      );
      await f.worker?.stop('SIGKILL');
      const left = cgroupsOf(id);
      expect(left.length).toBeGreaterThan(0);
      const agents = left.flatMap((d) => read(join(d, 'cgroup.procs')).split('\n').filter(Boolean).map(Number));
      expect(agents.some(aliveNow)).toBe(true);
      const state = f.tempDir('uh-cgcrash-w2-');
      next = await startWorker(['--state-dir', state, '--runtime', 'command', '--concurrency', '1'], {
        cwd: f.repo,
        env: { ...fleetEnv(f), UH_LOG_LEVEL: 'warn' },
      });
      await until('the sweep at start', () => cgroupsOf(id).length === 0, 30_000);
      await until('the agent to die', () => agents.every((p) => !aliveNow(p)));
    } finally {
      await next?.stop('SIGKILL');
      await stopFleet(f);
      await redis.cleanup();
    }
  }, 90_000);
});

function read(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
