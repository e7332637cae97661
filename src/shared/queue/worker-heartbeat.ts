/**
 * A worker's heartbeat: the key `<p>:worker:<id>` (live-workers.ts reads it), rewritten every
 * interval with a TTL of three intervals, deleted on a clean stop. Runtime pools and the results
 * worker each beat under their own id with their role, so `/v1/workers`, `uh_workers_live{role}`
 * and `uh doctor --redis` see both, and a `kill -9` of either is visible once the key expires.
 */
import type { Redis } from 'ioredis';
import type { QueueKeys } from './topology.js';

/** What a worker does: runs missions from runtime queues, or consumes the outbox (webhooks, batches, promotion). */
export type WorkerRole = 'runtime' | 'results';

export interface HeartbeatBody {
  id: string;
  role: WorkerRole;
  host: string;
  pid: number;
  runtimes: string[];
  concurrency?: number;
  active: string[];
  receipt_key_id: string | null;
  /** Free bytes on the filesystem of the worker's cache (runtime workers), null when unreadable. */
  disk_free_bytes?: number | null;
  /** The free-space floor below which the worker stops claiming jobs (`UH_MIN_FREE_BYTES`). */
  disk_floor_bytes?: number;
}

export interface RunningHeartbeat {
  /** Stop beating and delete the key (a clean stop is never mistaken for a death). */
  stop(): Promise<void>;
}

/** Beat now (so the worker is listed before it takes work), then every `intervalMs`. */
export async function startWorkerHeartbeat(
  redis: Redis,
  keys: QueueKeys,
  intervalMs: number,
  body: () => HeartbeatBody,
): Promise<RunningHeartbeat> {
  let id = body().id;
  const beat = async () => {
    const b = body();
    id = b.id;
    await redis
      .set(keys.worker(b.id), JSON.stringify({ ...b, at: new Date().toISOString() }), 'PX', intervalMs * 3)
      .catch(() => undefined);
  };
  await beat();
  const timer = setInterval(() => void beat(), intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await redis.del(keys.worker(id)).catch(() => undefined);
    },
  };
}
