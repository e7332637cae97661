/**
 * Queue mode against its floor, on the same Redis, in one run:
 *
 *   1. enqueue→receipt latency (p50/p95) of a no-op mission through `uh` (submit: prepare +
 *      record + BullMQ add; a worker process runs the whole pipeline: worktree, runtime `true`,
 *      diff, receipt, artifacts to Redis, settle), against raw BullMQ add→completed of an empty
 *      job (an in-process BullMQ Worker, `job.waitUntilFinished`). Contenders interleave.
 *   2. throughput: 300 trivial missions submitted at once, 2 worker processes × concurrency 4,
 *      from the first submit to the last settled record → missions/minute. The bench learns of
 *      each settlement from the outbox (one reader, as the results worker does), not from 300
 *      tails with a connection each (that cost is the bench's, not the queue's), then reads
 *      every record to check it finished and completed.
 *
 * Needs Redis at $REDIS_URL (default redis://127.0.0.1:6379); keys under a fresh prefix, removed
 * afterwards. `UH_BENCH_ROUNDS` (default 20) latency rounds, `UH_BENCH_MISSIONS` (default 200).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMs, interleave, percentile, printTable } from './bench-kit.js';
import { measureMissionCosts, printCeiling } from './queue-costs.js';

const UH = fileURLToPath(new URL('../../bin/uh.js', import.meta.url));
const ROUNDS = Number(process.env.UH_BENCH_ROUNDS ?? 20);
const MISSIONS = Number(process.env.UH_BENCH_MISSIONS ?? 300);
/** Extra node flags for the worker processes, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` (NODE_OPTIONS refuses --cpu-prof). */
const NODE_ARGS = (process.env.UH_BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);

function makeRepo(root: string): string {
  const repo = join(root, 'repo');
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: 'b',
    GIT_AUTHOR_EMAIL: 'b@b',
    GIT_COMMITTER_NAME: 'b',
    GIT_COMMITTER_EMAIL: 'b@b',
  };
  execFileSync('git', ['init', '-q', '-b', 'main', repo], { env });
  writeFileSync(join(repo, 'README.md'), '# bench\n');
  execFileSync('git', ['add', '-A'], { cwd: repo, env });
  execFileSync('git', ['commit', '-q', '-m', 'bench'], { cwd: repo, env });
  return repo;
}

function startWorkerProcess(env: Record<string, string>, stateDir: string, concurrency: number): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        ...NODE_ARGS,
        UH,
        'worker',
        'start',
        '--runtime',
        'command',
        '--concurrency',
        String(concurrency),
        '--state-dir',
        stateDir,
      ],
      {
        env: { ...process.env, ...env, UH_LOG_LEVEL: 'silent' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let err = '';
    child.stderr?.on('data', (c) => {
      err += c;
      if (err.includes('ready')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`worker exited ${code}: ${err}`)));
  });
}

/** `uh api start` on a free port; resolves with its base URL once it listens. */
function startApi(
  env: Record<string, string>,
  stateDir: string,
  cwd: string,
): Promise<{ child: ChildProcess; base: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [UH, 'api', 'start', '--port', '0', '--state-dir', stateDir], {
      cwd,
      env: { ...process.env, ...env, UH_LOG_LEVEL: 'silent', UH_ALLOW_LOCAL_REPOS: '1', UH_API_TOKEN: API_TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const onData = (c: Buffer) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, base: m[1] as string });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`api exited ${code}: ${out}`)));
  });
}

const API_TOKEN = 'uh-bench-token-0123456789abcdef';

/** POST every mission with `clients` concurrent clients; resolves when all got 201/200. */
async function postAll(base: string, missions: unknown[], clients: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < missions.length) {
        const body = JSON.stringify(missions[next++]);
        const res = await fetch(`${base}/v1/missions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${API_TOKEN}` },
          body,
        });
        if (res.status !== 201 && res.status !== 200)
          throw new Error(`POST /v1/missions: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
      }
    }),
  );
}

/** CPU ms of a process so far: its own (user + system) and its reaped children's (git, the runtime…). */
function cpuOf(pid: number | undefined): { self: number; children: number } {
  if (!pid) return { self: 0, children: 0 };
  // /proc/<pid>/stat: fields after the `(comm)`; utime stime cutime cstime are fields 14–17, in clock ticks (100/s).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /s, '')
    .split(' ')
    .map(Number);
  const tick = 10;
  return {
    self: ((fields[11] ?? 0) + (fields[12] ?? 0)) * tick,
    children: ((fields[13] ?? 0) + (fields[14] ?? 0)) * tick,
  };
}

/** Redis server CPU ms so far (INFO cpu). */
async function redisCpuMs(redis: { info: (section: string) => Promise<string> }): Promise<number> {
  const info = await redis.info('cpu');
  const v = (k: string) => Number(new RegExp(`${k}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return (v('used_cpu_sys') + v('used_cpu_user')) * 1000;
}

/**
 * Resolves once the outbox holds a completion for every id, read after `from` (the outbox's newest
 * entry before the first submit) on one dedicated connection; throws past the deadline.
 */
async function outboxSettled(
  redis: import('ioredis').Redis,
  outbox: string,
  from: string,
  ids: readonly string[],
  timeoutMs: number,
): Promise<void> {
  const waiting = new Set(ids);
  const reader = redis.duplicate();
  const deadline = Date.now() + timeoutMs;
  try {
    for (let last = from; waiting.size > 0;) {
      if (Date.now() > deadline) throw new Error(`${waiting.size} mission(s) not settled after ${timeoutMs} ms`);
      const reply = (await reader.xread('COUNT', 1000, 'BLOCK', 1000, 'STREAMS', outbox, last)) ?? [];
      for (const [, entries] of reply) {
        for (const [id, fields] of entries) {
          last = id;
          const completion = fields[fields.indexOf('completion') + 1];
          if (completion) waiting.delete((JSON.parse(completion) as { operation_id: string }).operation_id);
        }
      }
    }
  } finally {
    reader.disconnect();
  }
}

/** The id of the newest entry of a stream, `0-0` when it is empty. */
async function newestId(redis: import('ioredis').Redis, stream: string): Promise<string> {
  return (await redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export async function runQueueLatency(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `uhbench-${process.pid}`;
  const root = mkdtempSync(join(tmpdir(), 'uh-bench-queue-'));
  const repo = makeRepo(root);
  const env = { REDIS_URL: redisUrl, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: join(root, 'cache') };
  Object.assign(process.env, env); // the in-process producer reads the same settings

  const { QueueClient } = await import('../src/producers/queue/queue-client.js');
  const { submitOperation } = await import('../src/producers/submit.js');
  const { tailOperation } = await import('../src/shared/queue/event-stream.js');
  const { MissionSchema } = await import('../src/shared/contracts/mission.js');
  const { Queue, Worker, QueueEvents } = await import('bullmq');
  const { loadConfig } = await import('../src/shared/config.js');
  const client = await QueueClient.open(loadConfig().queue, redisUrl);
  const mission = (id: string) =>
    MissionSchema.parse({
      schema_version: 'uh.mission.v0',
      mission_id: 'bench',
      operation_id: id,
      title: 'no-op',
      objective: 'Do nothing.',
      repository: { url: repo, ref: 'main' },
      runtime: 'command',
      runtime_config_overrides: { command: { argv: ['true'] } },
      timeout_seconds: 60,
    });
  // The producer has its own cache (as on another host); the two workers share theirs.
  const opts = { stateDir: join(root, 'producer'), cacheDir: join(root, 'producer-cache') };

  const workers: ChildProcess[] = [];
  const raw = { queue: new Queue('raw', { connection: client.redis, prefix: `${prefix}:raw` }) };
  const rawConnection = client.redis.duplicate();
  const rawWorker = new Worker('raw', async () => 'ok', {
    connection: rawConnection,
    prefix: `${prefix}:raw`,
    concurrency: 1,
  });
  const rawEvents = new QueueEvents('raw', { connection: client.redis.duplicate(), prefix: `${prefix}:raw` });
  try {
    await Promise.all([rawWorker.waitUntilReady(), rawEvents.waitUntilReady()]);
    const costs = await measureMissionCosts({
      redisUrl,
      prefix,
      repo,
      stateDir: join(root, 'cost-state'),
      cacheDir: join(root, 'cache'),
      producerCacheDir: join(root, 'producer-cache'),
      mission,
    });
    workers.push(await startWorkerProcess(env, join(root, 'w1'), 1));
    // Warm-up: mirror clone, module caches.
    const warm = await submitOperation(client, mission('warm-0'), opts);
    await tailOperation(client.store, warm.record.operation_id, { from: 'start' });
    await (await raw.queue.add('x', {})).waitUntilFinished(rawEvents);

    let n = 0;
    const submitMs: number[] = [];
    const pipelineMs: number[] = [];
    const times = await interleave(ROUNDS, {
      'uh submit → receipt (queue, 1 worker process)': async () => {
        const id = `lat-${++n}`;
        const t = performance.now();
        await submitOperation(client, mission(id), opts);
        submitMs.push(performance.now() - t);
        const record = await tailOperation(client.store, id, { from: 'start', timeoutMs: 60_000 });
        if (record?.state !== 'finished') throw new Error(`${id} did not finish: ${record?.state}`);
        const receipt = JSON.parse((await client.store.redis.hget(client.store.keys.artifacts(id), 'receipt')) ?? '{}');
        pipelineMs.push(receipt.timings_ms?.total_ms ?? Number.NaN);
      },
      'raw BullMQ add → completed': async () => {
        await (await raw.queue.add('x', {})).waitUntilFinished(rawEvents);
      },
    });
    const [uhName, rawName] = Object.keys(times) as [string, string];
    const p = (name: string, q: number) => percentile(times[name] as number[], q);
    printTable(`Queue latency: enqueue → receipt, no-op mission (${ROUNDS} rounds, interleaved)`, [
      { contender: uhName, p50: fmtMs(p(uhName, 50)), p95: fmtMs(p(uhName, 95)) },
      { contender: rawName, p50: fmtMs(p(rawName, 50)), p95: fmtMs(p(rawName, 95)) },
      {
        contender: 'ratio uh / raw',
        p50: `${(p(uhName, 50) / p(rawName, 50)).toFixed(1)}×`,
        p95: `${(p(uhName, 95) / p(rawName, 95)).toFixed(1)}×`,
      },
    ]);

    const total = p(uhName, 50);
    printTable("Where a no-op mission's queue latency goes (medians)", [
      {
        part: 'submit: prepare (runtime, ref → commit: one rev-parse in the source; mirror commits remembered) + record + add',
        ms: fmtMs(percentile(submitMs, 50)),
      },
      {
        part: 'worker pipeline (receipt total_ms: sandbox, runtime, diff, receipt)',
        ms: fmtMs(percentile(pipelineMs, 50)),
      },
      {
        part: 'the rest: pickup, claim, worker-side prepare (no process once the mirror is known to have the commit), artifacts + settle, tail wake-up',
        ms: fmtMs(total - percentile(submitMs, 50) - percentile(pipelineMs, 50)),
      },
    ]);

    // Throughput: 2 worker processes × concurrency 4.
    await stopProcess(workers.pop() as ChildProcess);
    workers.push(
      await startWorkerProcess(env, join(root, 'w2'), 4),
      await startWorkerProcess(env, join(root, 'w3'), 4),
    );
    const { submitOperations } = await import('../src/producers/submit.js');
    // Steady state, as a long-lived fleet runs: both new workers load their modules, compile their
    // hot paths and fill their sandbox pools on a few missions first (not counted).
    const warmIds = Array.from({ length: 32 }, (_, i) => `warm-thr-${i}`);
    await submitOperations(client, warmIds.map(mission), opts);
    await Promise.all(warmIds.map((id) => tailOperation(client.store, id, { from: 'start', timeoutMs: 120_000 })));
    const settle = async (label: string, prefixId: string, submitAll: (ids: string[]) => Promise<void>) => {
      const ids = Array.from({ length: MISSIONS }, (_, i) => `${prefixId}-${i}`);
      const busy = workers.slice(0, 2); // the two `uh worker start` processes (the API is pushed after them)
      const from = await newestId(client.redis, client.store.keys.outbox);
      const cpu0 = {
        workers: busy.map((w) => cpuOf(w.pid)),
        producer: process.cpuUsage(),
        redis: await redisCpuMs(client.redis),
        api: cpuOf(api?.child.pid),
      };
      const t0 = performance.now();
      const watching = outboxSettled(client.redis, client.store.keys.outbox, from, ids, 600_000);
      await submitAll(ids);
      const submittedMs = performance.now() - t0;
      await watching;
      const totalMs = performance.now() - t0;
      const cpu1 = {
        workers: busy.map((w) => cpuOf(w.pid)),
        producer: process.cpuUsage(cpu0.producer),
        redis: await redisCpuMs(client.redis),
        api: cpuOf(api?.child.pid),
      };
      const perMission = (ms: number) => (ms / MISSIONS).toFixed(2);
      const sum = (
        f: (c: { self: number; children: number }) => number,
        xs: Array<{ self: number; children: number }>,
      ) => xs.reduce((s, c) => s + f(c), 0);
      cpuRows.push({
        producer: label,
        'worker node (2 processes)': perMission(sum((c) => c.self, cpu1.workers) - sum((c) => c.self, cpu0.workers)),
        'worker children (git, runtime)': perMission(
          sum((c) => c.children, cpu1.workers) - sum((c) => c.children, cpu0.workers),
        ),
        'producer (this process: submit, one outbox reader)': perMission(
          (cpu1.producer.user + cpu1.producer.system) / 1000,
        ),
        'api process': perMission(cpu1.api.self - cpu0.api.self),
        'redis-server': perMission(cpu1.redis - cpu0.redis),
      });
      const settled = await client.store.getMany(ids);
      const ok = settled.filter((r) => r?.state === 'finished' && r.status === 'completed').length;
      for (const r of settled.filter((x) => !(x?.state === 'finished' && x.status === 'completed'))) {
        const receipt = r
          ? await client.store.redis.hget(client.store.keys.artifacts(r.operation_id), 'receipt')
          : null;
        console.log(
          `not completed: ${r?.operation_id} ${r?.state} ${r?.status}: ${receipt ? JSON.parse(receipt).outcome.message : r?.unknown_reason}`,
        );
      }
      const perMinute = (MISSIONS / totalMs) * 60_000;
      rows.push({
        producer: label,
        missions: MISSIONS,
        completed: ok,
        'all submitted after': fmtMs(submittedMs),
        'last receipt after': fmtMs(totalMs),
        'missions/minute': perMinute.toFixed(0),
      });
      return perMinute;
    };
    const rows: Array<Record<string, string | number>> = [];
    const cpuRows: Array<Record<string, string | number>> = [];
    const viaCode = await settle('submitOperations (one batch, in-process producer)', 'thr', async (ids) => {
      const results = await submitOperations(client, ids.map(mission), opts);
      if (results.some((r) => r instanceof Error)) throw new Error('a submission conflicted');
    });
    const api = await startApi(env, join(root, 'api'), root);
    workers.push(api.child);
    const viaHttp = await settle('HTTP API (uh api start, 32 concurrent clients POST /v1/missions)', 'http', (ids) =>
      postAll(api.base, ids.map(mission), 32),
    );
    printTable(`Queue throughput: ${MISSIONS} trivial missions each way, 2 worker processes × concurrency 4`, rows);
    printTable(
      'CPU ms per mission in the throughput runs (/proc/<pid>/stat, process.cpuUsage, redis INFO cpu)',
      cpuRows,
    );
    printCeiling(costs, Math.max(viaCode, viaHttp));
  } finally {
    await Promise.all(workers.map(stopProcess));
    await rawWorker.close();
    await rawEvents.close();
    await raw.queue.close();
    rawConnection.disconnect();
    // uh's keys are hash-tagged (`{prefix}:…`), the raw BullMQ baseline's are not (`prefix:…`).
    for (const pattern of [`{${prefix}}:*`, `${prefix}:*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await client.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await client.redis.del(...keys);
      } while (cursor !== '0');
    }
    await client.close();
    rmSync(root, { recursive: true, force: true });
  }
}
