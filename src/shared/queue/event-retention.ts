/**
 * Event retention (`UH_EVENT_RETENTION_MINUTES`): what Redis keeps of events after operations
 * settle. Run by every runtime worker's sweep. Past the retention:
 *   - a settled operation's event stream (its transcript is in the artifact store);
 *   - outbox entries the results worker has acknowledged (never one still pending or not yet
 *     delivered: a results worker that was down still receives every completion);
 *   - BullMQ's own event streams of the given queues (QueueEvents notifications).
 * The bound: Redis holds the record, a pointer and little else per settled operation.
 */
import type { OperationStore } from './operation-store.js';
import { RESULTS_GROUP } from './topology.js';

export interface TrimResult {
  operations: number;
  outbox: number;
  queueEvents: number;
}

/** The smaller of two stream ids (`ms-seq`). */
function minId(a: string, b: string): string {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am < bm || (am === bm && as <= bs) ? a : b;
}

/** The id below which every outbox entry is acknowledged by the results group; null without a group. */
async function acknowledgedBelow(store: OperationStore): Promise<string | null> {
  const { redis, keys } = store;
  if ((await redis.exists(keys.outbox)) === 0) return null;
  const groups = (await redis.xinfo('GROUPS', keys.outbox)) as unknown[][];
  const group = groups
    .map((g) => Object.fromEntries(g.flatMap((v, i) => (i % 2 === 0 ? [[String(v), g[i + 1]]] : []))))
    .find((g) => g.name === RESULTS_GROUP);
  if (!group) return null;
  const summary = (await redis.xpending(keys.outbox, RESULTS_GROUP)) as [number, string | null, ...unknown[]];
  if (Number(summary[0]) > 0 && summary[1]) return summary[1];
  const [ms = '0', seq = '0'] = String(group['last-delivered-id'] ?? '0-0').split('-');
  return `${ms}-${Number(seq) + 1}`;
}

export async function trimEvents(
  store: OperationStore,
  o: { retentionMs: number; queues: readonly string[]; now?: number },
): Promise<TrimResult> {
  const now = o.now ?? Date.now();
  const cutoff = `${Math.max(0, now - o.retentionMs)}-0`;
  const operations = await store.trimSettledEvents(o.retentionMs, now);
  const acked = await acknowledgedBelow(store);
  const outbox = acked ? Number(await store.redis.xtrim(store.keys.outbox, 'MINID', minId(acked, cutoff))) : 0;
  let queueEvents = 0;
  for (const queue of o.queues) {
    queueEvents += Number(await store.redis.xtrim(`${store.keys.bullPrefix}:${queue}:events`, 'MINID', cutoff));
  }
  return { operations, outbox, queueEvents };
}
