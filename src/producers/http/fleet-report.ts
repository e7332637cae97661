/**
 * The fleet at a glance, for `uh doctor --redis` and /metrics: queue depth and live workers per
 * runtime, runtimes with queued jobs and no live worker (the fleet cannot make progress there),
 * operations in state unknown, outbox lag and the live results workers that consume the outbox.
 */
import type { QueueClient } from '../queue/queue-client.js';
import { RESULTS_GROUP } from '../../shared/queue/topology.js';
import { listWorkers, queueCounts, runtimeIds } from './fleet.js';

export const RECENT_OPERATIONS = 10_000;
const STATES = ['queued', 'running', 'verifying', 'finished', 'unknown'];

export interface RuntimeDepth {
  runtime: string;
  /** Jobs a worker could take now: waiting + prioritized (delayed ones are retries not due yet). */
  queued: number;
  delayed: number;
  active: number;
  live_workers: number;
}
export interface FleetReport {
  runtimes: RuntimeDepth[];
  /** Runtimes with queued jobs and no live worker. */
  stalled_runtimes: string[];
  unknown_operations: number;
  outbox_lag: number;
  /** Live results workers (role results): with none, webhooks, batch settlement and promotion wait. */
  results_workers: number;
}

/** Operations by state among the newest RECENT_OPERATIONS. */
export async function stateTally(client: QueueClient): Promise<Map<string, number>> {
  const { redis, keys } = client.store;
  const ids = await redis.zrevrange(keys.index, 0, RECENT_OPERATIONS - 1);
  const pipe = redis.pipeline();
  for (const id of ids) pipe.hget(keys.op(id), 'state');
  const tally = new Map<string, number>(STATES.map((s) => [s, 0]));
  for (const [, state] of (await pipe.exec()) ?? [])
    if (typeof state === 'string') tally.set(state, (tally.get(state) ?? 0) + 1);
  return tally;
}

/** Outbox entries the results consumer group has not delivered or acknowledged (all of them without a group). */
export async function outboxLag(client: QueueClient): Promise<number> {
  const { redis, keys } = client.store;
  const length = await redis.xlen(keys.outbox);
  const groups = (await redis.xinfo('GROUPS', keys.outbox).catch(() => [])) as unknown[][];
  const group = groups.map((g) => toObject(g)).find((g) => g.name === RESULTS_GROUP);
  if (!group) return length;
  const lag = typeof group.lag === 'number' ? group.lag : length;
  return lag + (typeof group.pending === 'number' ? group.pending : 0);
}

export async function fleetReport(client: QueueClient): Promise<FleetReport> {
  const workers = await listWorkers(client);
  const runtimes: RuntimeDepth[] = [];
  for (const runtime of await runtimeIds(client, workers)) {
    const c = await queueCounts(client, runtime);
    runtimes.push({
      runtime,
      queued: c.waiting + c.prioritized,
      delayed: c.delayed,
      active: c.active,
      live_workers: workers.filter((w) => w.role === 'runtime' && w.runtimes.includes(runtime)).length,
    });
  }
  return {
    runtimes,
    stalled_runtimes: runtimes.filter((r) => r.queued > 0 && r.live_workers === 0).map((r) => r.runtime),
    unknown_operations: (await stateTally(client)).get('unknown') ?? 0,
    outbox_lag: await outboxLag(client),
    results_workers: workers.filter((w) => w.role === 'results').length,
  };
}

function toObject(flat: unknown[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) o[String(flat[i])] = flat[i + 1];
  return o;
}
