/**
 * What one queued no-op mission costs, counted rather than timed: the processes it spawns (every
 * child goes through `spawnGroup`, which counts them by program) and the Redis commands it sends
 * (a `MONITOR` connection, commands split by the connection that sent them: producer, worker,
 * or the bench's own tail), against a raw BullMQ job on the same Redis. Also this machine's
 * process-spawn ceiling, to say how close a queue of such missions runs to it.
 *
 * Runs the worker in this process (a `startRuntimePool`, concurrency 1) so its spawns are counted.
 */
import type { Redis } from 'ioredis';
import { cpus } from 'node:os';
import { printTable } from './bench-kit.js';

interface CostContext {
  redisUrl: string;
  prefix: string;
  repo: string;
  stateDir: string;
  cacheDir: string;
  producerCacheDir: string;
  mission: (id: string) => unknown;
}

type MonitorLine = { source: string; args: string[] };

/** Every command on Redis while `fn` runs, with the address of the connection that sent it. */
async function monitored(redis: Redis, fn: () => Promise<void>): Promise<MonitorLine[]> {
  const monitor = await redis.monitor();
  const lines: MonitorLine[] = [];
  // A script's own commands show as `lua`, right after the EVALSHA that ran them: counted apart.
  let last = '';
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source !== 'lua') last = source;
    lines.push({ source: source === 'lua' ? `lua:${last}` : source, args });
  });
  try {
    await fn();
    await new Promise((r) => setTimeout(r, 50)); // the last commands reach the monitor
  } finally {
    monitor.disconnect();
  }
  return lines;
}

const addrOf = (r: Redis) =>
  `${(r as unknown as { stream: { localAddress: string; localPort: number } }).stream.localAddress}:${(r as unknown as { stream: { localPort: number } }).stream.localPort}`;

function byCommand(lines: MonitorLine[]): string {
  const counts = new Map<string, number>();
  for (const l of lines) {
    const name = (l.args[0] ?? '?').toLowerCase();
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}

function spawnDelta(
  before: Record<string, number>,
  after: Record<string, number>,
  n: number,
): { total: number; detail: string } {
  const rows = Object.entries(after)
    .map(([k, v]) => [k, (v - (before[k] ?? 0)) / n] as const)
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1]);
  return {
    total: rows.reduce((s, [, v]) => s + v, 0),
    detail: rows.map(([k, v]) => `${k} ${+v.toFixed(2)}`).join(', '),
  };
}

/** Processes a second this machine starts and reaps through spawnGroup, 8 at a time, for ~2 s. */
async function spawnCeiling(argv: string[], cwd: string): Promise<number> {
  const { spawnGroup } = await import('../src/shared/process/spawn-group.js');
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
  let done = 0;
  const until = performance.now() + 2000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (performance.now() < until) {
        await spawnGroup({ argv, cwd, env, stdout: 'ignore', stderr: 'ignore' }).result;
        done++;
      }
    }),
  );
  return (done / (performance.now() - t0)) * 1000;
}

export interface MissionCosts {
  processesPerMission: number;
  ceilingPerSecond: number;
  gitCeilingPerSecond: number;
}

export async function measureMissionCosts(ctx: CostContext, rounds = 5): Promise<MissionCosts> {
  const { loadConfig } = await import('../src/shared/config.js');
  const { QueueClient } = await import('../src/producers/queue/queue-client.js');
  const { submitOperation } = await import('../src/producers/submit.js');
  const { tailOperation } = await import('../src/shared/queue/event-stream.js');
  const { OperationStore } = await import('../src/shared/queue/operation-store.js');
  const { startRuntimePool } = await import('../src/workers/pools/runtime-pool.js');
  const { spawnCounts } = await import('../src/shared/process/spawn-group.js');
  const { compileSettings } = await import('../src/operation/settings.js');
  const { Queue, Worker, QueueEvents } = await import('bullmq');
  const config = { ...loadConfig().queue, prefix: ctx.prefix };
  const client = await QueueClient.open(config, ctx.redisUrl);
  const tailRedis = client.redis.duplicate();
  const tailStore = new OperationStore(tailRedis, ctx.prefix);
  const side = client.redis.duplicate();
  const pool = await startRuntimePool({
    settings: compileSettings(
      loadConfig({ ...process.env, UH_CACHE_DIR: ctx.cacheDir, UH_SANDBOX_KEEP_HOURS: '0', UH_SANDBOX_POOL_SIZE: '0' }),
      { stateDir: ctx.stateDir },
    ),
    redisUrl: ctx.redisUrl,
    config,
    runtimes: ['command'],
    concurrency: 1,
  });
  const rawPrefix = `${ctx.prefix}:rawcost`;
  const raw = new Queue('raw', { connection: client.redis, prefix: rawPrefix });
  const rawWorker = new Worker('raw', async () => 'ok', {
    connection: client.redis.duplicate(),
    prefix: rawPrefix,
    concurrency: 1,
  });
  const rawEvents = new QueueEvents('raw', { connection: client.redis.duplicate(), prefix: rawPrefix });
  try {
    await Promise.all([rawWorker.waitUntilReady(), rawEvents.waitUntilReady(), tailRedis.ping()]);
    const opts = { stateDir: `${ctx.stateDir}-producer`, cacheDir: ctx.producerCacheDir };
    const one = async (id: string) => {
      await submitOperation(client, ctx.mission(id) as never, opts);
      const record = await tailOperation(tailStore, id, { from: 'start', timeoutMs: 60_000 });
      if (record?.state !== 'finished') throw new Error(`${id} did not finish`);
    };
    await one('cost-warm'); // mirror clones, module caches
    await (await raw.add('x', {})).waitUntilFinished(rawEvents);
    const before = spawnCounts();
    let n = 0;
    const lines = await monitored(side, async () => {
      for (let i = 0; i < rounds; i++) await one(`cost-${++n}`);
    });
    const spawns = spawnDelta(before, spawnCounts(), rounds);
    const rawLines = await monitored(side, async () => {
      for (let i = 0; i < rounds; i++) await (await raw.add('x', {})).waitUntilFinished(rawEvents);
    });
    const producer = addrOf(client.redis);
    const tail = addrOf(tailRedis);
    // Not ours: this run's raw BullMQ baselines (`<prefix>:rawcost`, and the latency bench's `<prefix>:raw`, whose QueueEvents keeps polling with XREAD).
    const ours = lines.filter(
      (l) => l.args.some((a) => a.includes(ctx.prefix)) && !l.args.some((a) => a.includes(`${ctx.prefix}:raw`)),
    );
    const prod = ours.filter((l) => l.source === producer);
    // The tail reads the stream on a connection of its own (XREAD BLOCK); a runtime worker never sends XREAD.
    const isTail = (l: MonitorLine) => l.source === tail || (l.args[0] ?? '').toLowerCase() === 'xread';
    const tailed = ours.filter(isTail);
    const worker = ours.filter((l) => l.source !== producer && !isTail(l) && !l.source.startsWith('lua:'));
    const scripted = ours.filter((l) => l.source.startsWith('lua:'));
    const rawOurs = rawLines.filter((l) => l.args.some((a) => a.includes(rawPrefix)) && !l.source.startsWith('lua:'));
    const per = (x: MonitorLine[]) => +(x.length / rounds).toFixed(1);
    printTable(`What one queued no-op mission costs (mean of ${rounds}, worker in-process, concurrency 1)`, [
      { what: 'processes spawned (producer + worker)', count: +spawns.total.toFixed(2), detail: spawns.detail },
      { what: 'Redis round trips: producer (submit)', count: per(prod), detail: byCommand(prod) },
      {
        what: 'Redis round trips: worker (pickup → settle, BullMQ included)',
        count: per(worker),
        detail: byCommand(worker),
      },
      { what: 'commands run inside those scripts (no round trip)', count: per(scripted), detail: byCommand(scripted) },
      { what: 'Redis round trips: the bench waiting (tail)', count: per(tailed), detail: byCommand(tailed) },
      {
        what: 'Redis round trips: raw BullMQ job (add → completed, all connections)',
        count: per(rawOurs),
        detail: byCommand(rawOurs),
      },
    ]);
    const ceiling = await spawnCeiling(['true'], ctx.repo);
    const gitCeiling = await spawnCeiling(['git', 'rev-parse', 'HEAD'], ctx.repo);
    return { processesPerMission: spawns.total, ceilingPerSecond: ceiling, gitCeilingPerSecond: gitCeiling };
  } finally {
    await pool.shutdown('bench done', 1000);
    await rawWorker.close();
    await rawEvents.close();
    await raw.close();
    tailRedis.disconnect();
    side.disconnect();
    await client.close();
  }
}

export function printCeiling(costs: MissionCosts, missionsPerMinute: number): void {
  const neededPerSecond = (costs.processesPerMission * missionsPerMinute) / 60;
  const at2500 = (costs.processesPerMission * 2500) / 60;
  printTable(`Processes per mission against this machine's spawn ceiling (${cpus().length} cores)`, [
    { what: 'spawn ceiling: `true` through spawnGroup, 8 at a time', 'per second': costs.ceilingPerSecond.toFixed(0) },
    { what: 'spawn ceiling: `git rev-parse HEAD`, 8 at a time', 'per second': costs.gitCeilingPerSecond.toFixed(0) },
    {
      what: `processes per mission × ${missionsPerMinute.toFixed(0)} missions/min (measured)`,
      'per second': `${neededPerSecond.toFixed(0)} (${((100 * neededPerSecond) / costs.gitCeilingPerSecond).toFixed(0)} % of the git ceiling)`,
    },
    {
      what: 'processes per mission × 2,500 missions/min (target)',
      'per second': `${at2500.toFixed(0)} (${((100 * at2500) / costs.gitCeilingPerSecond).toFixed(0)} % of the git ceiling)`,
    },
  ]);
}
