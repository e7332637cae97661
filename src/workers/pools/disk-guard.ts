/**
 * Every worker keeps its disk bounded: the retention policy (sandbox/gc.ts) at start and every
 * `UH_GC_INTERVAL_MS`, and a free-disk floor: below `UH_MIN_FREE_BYTES` on the cache's
 * filesystem the worker pauses its BullMQ workers (running missions go on; new jobs wait for
 * another worker) and says so; it resumes once the sweep freed enough.
 */
import type { Worker } from 'bullmq';
import type { GcConfig } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';
import { pruneRecords } from '../../shared/queue/prune-records.js';
import { trimEvents } from '../../shared/queue/event-retention.js';
import { applyGc, freeBytes, planGc } from '../sandbox/gc.js';
import { drainPool } from '../sandbox/sandbox-pool.js';

export interface DiskGuardOptions {
  gc: GcConfig;
  cacheDir: string;
  stateDir: string;
  store: OperationStore;
  /** A settled operation's Redis event stream goes this long after settling (its transcript is in the store). */
  eventRetentionMs?: number;
  workers: Worker[];
  logger: Logger;
}

async function sweepOnce(o: DiskGuardOptions, paused: { value: boolean }): Promise<void> {
  const now = new Date();
  const policy = {
    now,
    mirrorIdleDays: o.gc.mirrorIdleDays,
    operationRetentionDays: o.gc.operationRetentionDays,
    cacheCapBytes: o.gc.cacheCapBytes,
  };
  const ports = { operationState: async (id: string) => (await o.store.get(id))?.state ?? null };
  const { removed, orphans, cgroups } = await applyGc(
    o.cacheDir,
    await planGc(o.cacheDir, o.stateDir, policy, ports),
    now,
  );
  if (removed.length + orphans.length + cgroups.length > 0) {
    o.logger.info(
      {
        removed: removed.length,
        orphans: orphans.length,
        cgroups: cgroups.length,
        bytes: removed.reduce((n, i) => n + i.bytes, 0),
      },
      'retention sweep',
    );
  }
  // Redis too: settled operations past the retention lose their record, events and artifacts.
  const pruned = await pruneRecords(o.store, new Date(now.getTime() - o.gc.operationRetentionDays * 86_400_000));
  if (pruned.removed.length > 0)
    o.logger.info({ redis_records: pruned.removed.length }, 'retention sweep: Redis records pruned');
  if (o.eventRetentionMs !== undefined) {
    const queues = o.workers.map((w) => w.name);
    const trimmed = await trimEvents(o.store, { retentionMs: o.eventRetentionMs, queues, now: now.getTime() });
    if (trimmed.operations + trimmed.outbox + trimmed.queueEvents > 0)
      o.logger.info({ ...trimmed }, 'retention sweep: settled events trimmed from Redis');
  }
  let free = freeBytes(o.cacheDir);
  // Below the floor, warm sandboxes are the first thing to go.
  if (free !== null && free < o.gc.minFreeBytes && (await drainPool(o.cacheDir)) > 0) free = freeBytes(o.cacheDir);
  const low = free !== null && free < o.gc.minFreeBytes;
  if (low && !paused.value) {
    paused.value = true;
    o.logger.warn(
      { free_bytes: free, floor_bytes: o.gc.minFreeBytes, cache_dir: o.cacheDir },
      'disk below the free-space floor: not claiming new jobs until the sweep frees space',
    );
    for (const w of o.workers) void w.pause(true);
  } else if (!low && paused.value) {
    paused.value = false;
    o.logger.warn({ free_bytes: free }, 'disk above the floor again: claiming jobs');
    for (const w of o.workers) w.resume();
  }
}

/** Sweep now and every interval; returns the stop function. */
export function startDiskGuard(o: DiskGuardOptions): () => void {
  const paused = { value: false };
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    await sweepOnce(o, paused)
      .catch((error) =>
        o.logger.warn({ err: (error as Error).message }, 'retention sweep failed; retrying next interval'),
      )
      .finally(() => (running = false));
  };
  void tick();
  const timer = setInterval(() => void tick(), o.gc.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
