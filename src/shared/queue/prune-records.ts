/**
 * Redis retention: a settled (`finished`) operation older than the retention loses its record,
 * events, artifacts and attempt counter, and leaves the index (the artifact store keeps its blobs). Never a queued, running, verifying
 * or unknown one: those still need their record (recover, the owner watch, the waiting producer).
 * Every key carries the fleet's hash tag, so one operation's keys are deleted in one call on a
 * Cluster too. Bounded per pass (`limit` candidates, oldest first by creation time).
 */
import type { OperationStore } from './operation-store.js';

export interface PruneResult {
  /** Operation ids whose Redis keys were removed. */
  removed: string[];
  /** Candidates old enough but not settled (kept). */
  kept: number;
}

export async function pruneRecords(store: OperationStore, cutoff: Date, limit = 500): Promise<PruneResult> {
  const { redis, keys } = store;
  const candidates = await redis.zrangebyscore(keys.index, '-inf', cutoff.getTime(), 'LIMIT', 0, limit);
  const removed: string[] = [];
  let kept = 0;
  for (const id of candidates) {
    const record = await store.get(id);
    const old = record ? Date.parse(record.updated_at) <= cutoff.getTime() : true;
    if (record && (record.state !== 'finished' || !old)) {
      kept += 1;
      continue;
    }
    await redis.del(keys.op(id), keys.events(id), keys.artifacts(id), keys.attempts(id), keys.overflow(id));
    await redis.zrem(keys.index, id);
    await redis.zrem(keys.settled, id);
    removed.push(id);
  }
  return { removed, kept };
}
