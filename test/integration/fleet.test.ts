/**
 * Fleet operation (issue 12): dead workers noticed in seconds by the live ones (no operator
 * command, BullMQ's lock left at its 120 s default), safety rails at `uh worker start` and
 * `uh mission submit`. Real Redis, real worker processes, real git, the fake agent.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { FAKE_AGENT, runCli, type CliResult } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

// This file's fake agents coordinate with the test through files outside their sandbox (pid, gate and
// counter files), which bubblewrap isolation hides by design; isolation itself is tested in test/security/.
process.env.UH_ISOLATION = 'off';

let redis: TestRedis;
let repo: string;
let cacheDir: string;
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
const orphans: number[] = [];

beforeAll(async () => {
  redis = await startTestRedis('fleet');
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-fcache-');
  dirs.push(repo, cacheDir);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  for (const pid of orphans) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

/** Default heartbeat, lock (120 s) and stalled timings: only the heartbeat watch can notice in seconds. */
const env = (prefix: string, extra: Record<string, string> = {}) => ({
  REDIS_URL: redis.url,
  UH_REDIS_PREFIX: prefix,
  UH_CACHE_DIR: cacheDir,
  ...extra,
});
const state = () => {
  const d = tempDir('uh-fstate-');
  dirs.push(d);
  return d;
};
const uh = (prefix: string, args: string[], extra: Record<string, string> = {}): Promise<CliResult> =>
  runCli(args, { cwd: repo, env: env(prefix, extra) });
async function worker(prefix: string, args: string[]): Promise<WorkerProcess> {
  const w = await startWorker(['--state-dir', state(), ...args], {
    cwd: repo,
    env: { ...env(prefix), UH_LOG_LEVEL: 'warn' },
  });
  workers.push(w);
  return w;
}
const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

/** Processes whose command line holds `token` (the agent, and under bwrap its bwrap parent). */
function processesWith(token: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(token)) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/**
 * kill -9 the victim once its agent runs (and, with `settled`, once the agent has read its prompt and
 * printed: killed earlier, an agent dies of the broken pipe by itself); the ms until `uh mission status`
 * says unknown, and the events.
 */
async function killAndTime(
  prefix: string,
  operationId: string,
  victim: WorkerProcess,
  token: string,
  settled: () => boolean = () => true,
  afterKill: () => Promise<unknown> = async () => undefined,
) {
  expect(await waitFor(() => processesWith(token).length > 0 && settled(), 20_000)).toBe(true);
  orphans.push(...processesWith(token));
  await victim.stop('SIGKILL');
  const killedAt = Date.now();
  const aliveAfterKill = processesWith(token).length;
  await afterKill();
  let status: CliResult | null = null;
  while (Date.now() < killedAt + 30_000) {
    status = await uh(prefix, ['mission', 'status', operationId, '--json', '--state-dir', state()]);
    if (status.stdout && JSON.parse(status.stdout).operation?.state === 'unknown') break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const noticedMs = Date.now() - killedAt;
  expect(status?.code).toBe(5);
  expect(JSON.parse(status?.stdout ?? '{}').operation.state).toBe('unknown');
  const events = (await redis.redis.xrange(`{${prefix}}:op:${operationId}:events`, '-', '+')).flatMap(([, f]) =>
    f[0] === 'event' ? [JSON.parse(f[1] as string)] : [],
  );
  const reason = String(events.find((e) => e.type === 'operation.unknown')?.data.reason ?? '');
  return { noticedMs, aliveAfterKill, reason };
}

/** A manifest runtime (`uh adapter add`) in `stateDir` whose argv runs the fake agent. */
async function manifestRuntime(stateDir: string, id: string, agentArgs: string[]): Promise<void> {
  const add = await runCli(['adapter', 'add', id, '--kind', 'command', '--state-dir', stateDir], {
    cwd: repo,
    env: env('unused'),
  });
  expect(add.code).toBe(0);
  const path = join(stateDir, 'adapters', `${id}.yaml`);
  const manifest = parseYaml(readFileSync(path, 'utf8'));
  manifest.runtime_config.argv = [process.execPath, FAKE_AGENT, ...agentArgs];
  writeFileSync(path, JSON.stringify(manifest));
}

/**
 * How the watch that declared the owner dead ended its agent: the phase's cgroup (a cgroup
 * backend) or the recorded process group (rlimits), either named with this host.
 */
const AGENT_KILLED = /agent (cgroup\(s\) uh-\S+ killed on \S+ \(\d+ process\(es\)\)|process group\(s\) \d+ killed on )/;

describe('a worker killed with -9 mid-mission', () => {
  it('is noticed by a live worker: unknown within 15 s, operation.unknown event, the agent killed, run once', async () => {
    const prefix = redis.prefix('dead');
    const countFile = join(tempDir('uh-count-'), 'count');
    const { path, operationId } = writeMission(repo, ['count', countFile, 'slow', '60000']);
    // The watcher serves another runtime: any live worker watches every queue.
    await worker(prefix, ['--runtime', 'hermes', '--allow-unready']);
    const victim = await worker(prefix, ['--runtime', 'command']);
    expect((await uh(prefix, ['mission', 'submit', path, '--state-dir', state()])).code).toBe(0);
    // Killed once the agent sleeps past its prompt, so it outlives its worker (an earlier kill breaks its pipe).
    const asleep = () => lines(countFile).length === 1;
    // A worker started meanwhile sweeps dead workers' cgroups, but spares a running operation's to the watch.
    const { noticedMs, reason } = await killAndTime(prefix, operationId, victim, countFile, asleep, () =>
      worker(prefix, ['--runtime', 'hermes', '--allow-unready']),
    );
    expect(noticedMs).toBeLessThan(15_000);
    process.stderr.write(
      `fleet: kill -9 (isolation off) → unknown in ${noticedMs} ms (default heartbeat): ${reason}\n`,
    );
    expect(reason).toContain('heartbeat expired');
    // Unisolated, nothing but the watch ends the dead worker's agent (no bwrap --die-with-parent).
    expect(reason).toMatch(AGENT_KILLED);
    expect(await waitFor(() => processesWith(countFile).length === 0, 5_000)).toBe(true);
    // A second worker for the runtime never runs it again.
    await worker(prefix, ['--runtime', 'command']);
    const again = await uh(prefix, [
      'mission',
      'submit',
      path,
      '--wait',
      '--json',
      '--timeout',
      '5',
      '--state-dir',
      state(),
    ]);
    expect(again.code).toBe(5);
    expect(lines(countFile)).toHaveLength(1);
  });

  it('with a results worker as the only watcher: unknown within 15 s and the unisolated agent killed', async () => {
    const prefix = redis.prefix('resultswatch');
    const token = join(tempDir('uh-count-'), 'count');
    const { path, operationId } = writeMission(repo, ['count', token, 'slow', '60000']);
    await worker(prefix, ['--results']);
    const victim = await worker(prefix, ['--runtime', 'command']);
    expect((await uh(prefix, ['mission', 'submit', path, '--state-dir', state()])).code).toBe(0);
    // The agent is asleep past its prompt: only the watch can end it now (nothing unisolated dies with its worker).
    const asleep = () => lines(token).length === 1;
    const { noticedMs, reason, aliveAfterKill } = await killAndTime(prefix, operationId, victim, token, asleep);
    process.stderr.write(`fleet: kill -9 watched by the results worker alone → unknown in ${noticedMs} ms\n`);
    expect(aliveAfterKill).toBe(1);

    expect(noticedMs).toBeLessThan(15_000);
    expect(reason).toContain('heartbeat expired); agent ');
    expect(reason).toMatch(AGENT_KILLED);
    expect(await waitFor(() => processesWith(token).length === 0, 5_000)).toBe(true);
  });

  it('of a worker serving a manifest runtime: noticed by a worker that does not know the runtime', async () => {
    const prefix = redis.prefix('manifest');
    const stateDir = state();
    const token = join(tempDir('uh-count-'), 'count');
    await manifestRuntime(stateDir, 'fleet-agent', ['count', token, 'slow', '60000']);
    const { path, operationId } = writeMission(repo, [], { runtime: 'fleet-agent', runtime_config_overrides: {} });
    await worker(prefix, ['--runtime', 'hermes', '--allow-unready']);
    const victim = await startWorker(['--state-dir', stateDir, '--runtime', 'fleet-agent'], {
      cwd: repo,
      env: { ...env(prefix), UH_LOG_LEVEL: 'warn' },
    });
    workers.push(victim);
    expect((await uh(prefix, ['mission', 'submit', path, '--state-dir', stateDir])).code).toBe(0);
    const { noticedMs, reason, aliveAfterKill } = await killAndTime(prefix, operationId, victim, token);
    process.stderr.write(`fleet: kill -9 (manifest runtime) → unknown in ${noticedMs} ms, ${aliveAfterKill} alive\n`);
    expect(noticedMs).toBeLessThan(15_000);
    expect(reason).toContain('heartbeat expired); ');
    expect(reason).toMatch(new RegExp(`${AGENT_KILLED.source}|no agent process left alive`));
    expect(await waitFor(() => processesWith(token).length === 0, 5_000)).toBe(true);
    // Settled operations leave the running index; the watch scans it, not the runtime list.
    expect(await redis.redis.smembers(`{${prefix}}:running`)).toEqual([]);
  });

  it('under bubblewrap: unknown within 15 s and the sandboxed agent gone with its worker', async () => {
    const prefix = redis.prefix('bwrap');
    // The agent's marker is only an argument: under bwrap it cannot write outside its sandbox.
    const token = `uh-fleet-marker-${process.pid}-${Date.now()}`;
    const { path, operationId } = writeMission(repo, ['count', `/tmp/${token}`, 'slow', '60000']);
    const isolated = { ...env(prefix), UH_LOG_LEVEL: 'warn', UH_ISOLATION: 'require' };
    workers.push(
      await startWorker(['--state-dir', state(), '--runtime', 'hermes', '--allow-unready'], {
        cwd: repo,
        env: isolated,
      }),
    );
    const victim = await startWorker(['--state-dir', state(), '--runtime', 'command'], { cwd: repo, env: isolated });
    workers.push(victim);
    expect(
      (await uh(prefix, ['mission', 'submit', path, '--state-dir', state()], { UH_ISOLATION: 'require' })).code,
    ).toBe(0);
    const { noticedMs, reason } = await killAndTime(prefix, operationId, victim, token);
    process.stderr.write(`fleet: kill -9 (bubblewrap) → unknown in ${noticedMs} ms\n`);
    expect(noticedMs).toBeLessThan(15_000);
    expect(reason).toContain('heartbeat expired');
    expect(await waitFor(() => processesWith(token).length === 0, 5_000)).toBe(true);
  });
});

describe('safety rails', () => {
  it('a worker for a runtime whose binary is missing exits 3 at start with the check hint', async () => {
    const prefix = redis.prefix('unready');
    const r = await uh(prefix, ['worker', 'start', '--runtime', 'hermes', '--state-dir', state()], {
      PATH: '/usr/bin:/bin',
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('runtime hermes is not ready');
    expect(r.stderr).toMatch(/hint: .*install Hermes/);
  });

  it('submit warns when no live worker serves the runtime; --require-worker exits 3 and enqueues nothing', async () => {
    const prefix = redis.prefix('noworker');
    const { path, operationId } = writeMission(repo, []);
    const refused = await uh(prefix, ['mission', 'submit', path, '--require-worker', '--state-dir', state()]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('no live worker serves runtime command');
    expect(await redis.redis.exists(`{${prefix}}:op:${operationId}`)).toBe(0);
    const warned = await uh(prefix, ['mission', 'submit', path, '--state-dir', state()]);
    expect(warned.code).toBe(0);
    expect(warned.stderr).toContain('warning: no live worker serves runtime command');
    await worker(prefix, ['--runtime', 'command']);
    const served = await uh(prefix, [
      'mission',
      'submit',
      writeMission(repo, []).path,
      '--require-worker',
      '--wait',
      '--state-dir',
      state(),
    ]);
    expect(served.code).toBe(0);
    expect(served.stderr).not.toContain('no live worker');
  });
});
