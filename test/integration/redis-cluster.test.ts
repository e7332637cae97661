/**
 * The fleet on a real Redis Cluster (issue 12): 3 masters + 3 replicas from `redis-server` on
 * loopback ports, `redis-cli --cluster create … --cluster-replicas 1`; workers and producers with
 * `UH_REDIS_CLUSTER=1`; missions of two runtimes (command + the fake hermes); the master holding
 * the fleet's slot is killed mid-run: after failover every operation settles, none lost, none
 * run twice (a marker line per run).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

// This file's fake agents coordinate with the test through files outside their sandbox (pid, gate and
// counter files), which bubblewrap isolation hides by design; isolation itself is tested in test/security/.
process.env.UH_ISOLATION = 'off';

const FAKE_HERMES = fileURLToPath(new URL('../fixtures/bin/fake-hermes.mjs', import.meta.url));
let PORTS: number[] = [];
const servers = new Map<number, ChildProcess>();
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
let cluster: Cluster;
let repo: string;

async function until(what: string, check: () => Promise<boolean> | boolean, boundMs = 30_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
const cli = (port: number, ...args: string[]) =>
  execFileSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 });

/** Can a server listen on 127.0.0.1:port right now? */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** Six ports whose cluster-bus ports (+10000) are free too (a fixed range once met RabbitMQ's 25672). */
async function freePorts(): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const base = 20000 + Math.floor(Math.random() * 2500) * 10;
    const ports = [0, 1, 2, 3, 4, 5].map((i) => base + i);
    const free = await Promise.all(ports.flatMap((p) => [portFree(p), portFree(p + 10000)]));
    if (free.every(Boolean)) return ports;
  }
  throw new Error('no six free loopback ports (and their bus ports) found');
}

beforeAll(async () => {
  PORTS = await freePorts();
  const data = tempDir('uh-cluster-');
  dirs.push(data);
  for (const port of PORTS) {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--cluster-node-timeout',
        '2000',
        '--dir',
        data,
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: 'ignore' },
    );
    servers.set(port, child);
  }
  await until('six redis-servers', () =>
    PORTS.every((p) => {
      try {
        return cli(p, 'ping').trim() === 'PONG';
      } catch {
        return false;
      }
    }),
  );
  execFileSync(
    'redis-cli',
    ['--cluster', 'create', ...PORTS.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'],
    { stdio: 'ignore', timeout: 60_000 },
  );
  await until('cluster state ok', () => PORTS.every((p) => cli(p, 'cluster', 'info').includes('cluster_state:ok')));
  // A replica that has not finished its first sync refuses to fail over (its data is "too old"):
  // with a fast start the master was once killed before that, and no failover ever came.
  await until('every replica in sync', () =>
    PORTS.every((p) => {
      const info = cli(p, 'info', 'replication');
      return info.includes('role:master') || info.includes('master_link_status:up');
    }),
  );
  cluster = new Cluster([{ host: '127.0.0.1', port: PORTS[0] as number }]);
  repo = makeRepo({ 'README.md': '# demo\n' });
  dirs.push(repo);
}, 90_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  cluster?.disconnect();
  for (const s of servers.values()) s.kill('SIGKILL');
  dirs.forEach(removeDir);
});

/** The port of the master serving the fleet's hash tag. */
function masterOf(tag: string): number {
  const alive = PORTS.find((p) => servers.get(p)?.exitCode === null && servers.get(p)?.signalCode === null) as number;
  const slot = Number(cli(alive, 'cluster', 'keyslot', `{${tag}}`).trim());
  for (const line of cli(alive, 'cluster', 'nodes').trim().split('\n')) {
    const f = line.split(' ');
    if (!f[2]?.includes('master') || f[2].includes('fail')) continue;
    for (const range of f.slice(8)) {
      const [a = -1, b = a] = range.split('-').map(Number);
      if (slot >= a && slot <= b) return Number(f[1]?.split(':')[1]?.split('@')[0]);
    }
  }
  return -1; // none right now (failing over)
}

describe('a fleet on a Redis Cluster', () => {
  it('runs missions of two runtimes; a master killed mid-run fails over: every operation settles once', async () => {
    const prefix = `uhtc-${process.pid}`;
    const cacheDir = tempDir('uh-ccache-');
    const marks = tempDir('uh-cmarks-');
    dirs.push(cacheDir, marks);
    // Heartbeat keys live 3 × UH_HEARTBEAT_MS, renewed every UH_HEARTBEAT_MS: one renewed just before
    // the kill outlives it by 2 × UH_HEARTBEAT_MS at least, which must cover the failover (3.6–4.9 s
    // here; docs/deploy.md). With 2 s (4 s of cover) operations of live workers ended unknown when
    // the failover took 4.9 s; 3 s gives 6 s.
    const env = {
      REDIS_URL: `redis://127.0.0.1:${PORTS[0]}`,
      UH_REDIS_CLUSTER: '1',
      UH_REDIS_PREFIX: prefix,
      UH_CACHE_DIR: cacheDir,
      UH_HEARTBEAT_MS: '3000',
      UH_LOG_LEVEL: 'info',
    };
    for (const args of [
      ['--runtime', 'command', '--concurrency', '3'],
      ['--runtime', 'hermes', '--allow-unready', '--concurrency', '2'],
    ]) {
      workers.push(await startWorker([...args, '--state-dir', tempDir('uh-cstate-')], { cwd: repo, env }));
    }
    const ids: Array<{ id: string; marker: string }> = [];
    for (let i = 0; i < 12; i += 1) {
      const marker = join(marks, `run-${i}`);
      const m =
        i % 3 === 2
          ? writeMission(repo, [], {
              runtime: 'hermes',
              runtime_config_overrides: { hermes: { binary: FAKE_HERMES, env: { UH_FAKE_SCENARIO: 'success' } } },
            })
          : writeMission(repo, ['count', marker, 'slow', '1500']);
      const r = await runCli(['mission', 'submit', m.path, '--state-dir', tempDir('uh-cs-')], { cwd: repo, env });
      expect(r.code, r.stderr).toBe(0);
      ids.push({ id: m.operationId, marker: i % 3 === 2 ? '' : marker });
    }
    const started = Date.now();
    await until('a first mission to run', () => ids.some((x) => x.marker && existsSync(x.marker)), 30_000);
    const victim = masterOf(prefix);
    expect(victim).toBeGreaterThan(0);
    const killedAt = Date.now();
    servers.get(victim)?.kill('SIGKILL');
    await until('the kill', () => servers.get(victim)?.signalCode === 'SIGKILL', 5000);
    await until('failover', () => ![victim, -1].includes(masterOf(prefix)), 30_000);
    const failoverMs = Date.now() - killedAt;

    const state = async (id: string) => cluster.hget(`{${prefix}}:op:${id}`, 'state');
    await until(
      'every operation to settle',
      async () => (await Promise.all(ids.map((x) => state(x.id)))).every((s) => s === 'finished' || s === 'unknown'),
      100_000,
    ).catch(async (error: Error) => {
      const records = await Promise.all(
        ids.map(async (x) => JSON.stringify(await cluster.hgetall(`{${prefix}}:op:${x.id}`))),
      );
      throw new Error(
        `${error.message}\nrecords:\n${records.join('\n')}\nworkers:\n${workers.map((w) => w.output().slice(-3000)).join('\n---\n')}`,
      );
    });
    const states = await Promise.all(ids.map((x) => state(x.id)));
    // Settled is not enough: a mission whose Redis writes failed mid-failover settles `failed`.
    const statuses = await Promise.all(ids.map(async (x) => cluster.hget(`{${prefix}}:op:${x.id}`, 'status')));
    const runs = ids
      .filter((x) => x.marker)
      .map((x) => (existsSync(x.marker) ? readFileSync(x.marker, 'utf8').trim().split('\n').length : 0));
    process.stderr.write(
      `cluster: 12 missions (8 command, 4 hermes), master :${victim} killed; failover after ${failoverMs} ms; states ${JSON.stringify(states)}; statuses ${JSON.stringify(statuses)}; runs ${JSON.stringify(runs)}; all settled after ${Date.now() - started} ms\n`,
    );
    if (!states.every((s) => s === 'finished') || !statuses.every((s) => s === 'completed')) {
      const records = await Promise.all(
        ids.map(async (x) => JSON.stringify(await cluster.hgetall(`{${prefix}}:op:${x.id}`))),
      );
      expect.fail(
        `not every operation finished completed: ${JSON.stringify(states)} ${JSON.stringify(statuses)}\nrecords:\n${records.join('\n')}\nworkers:\n${workers.map((w) => w.output().slice(-4000)).join('\n---\n')}`,
      );
    }
    expect(runs.every((n) => n === 1)).toBe(true);
  }, 180_000);
});
