/**
 * The runtime worker pool: BullMQ wiring only. One `Worker` per runtime queue (`runtime.<id>`),
 * `concurrency` jobs each, every job through `processOperationJob` (the shared pipeline).
 *
 * Lock settings (docs/queue.md, "Locks and stalled jobs"): BullMQ renews a job's lock every
 * lockDuration/2 while the processor runs, so an hours-long mission keeps its lock as long as the
 * worker lives; lockDuration only bounds how long a dead worker's job looks alive. The stalled
 * checker re-delivers such a job once (maxStalledCount 1) so a live worker can mark it unknown;
 * past the limit BullMQ fails it and the `failed` listener marks it unknown instead.
 *
 * Also here: the cancel subscriber (pub/sub → the owning operation's AbortController), a
 * heartbeat key per worker (recover uses it to tell a dead owner from a slow one), and graceful
 * shutdown: stop taking jobs, grace period, then cancel what still runs (cancelled receipts).
 */
import type { OperationSettings } from '../../operation/settings.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { completionOf, OperationStore, type OperationJob } from '../../shared/queue/operation-store.js';
import type { GcConfig, QueueConfig } from '../../shared/config.js';
import { connectRedis } from '../../shared/queue/redis-connection.js';
import { AdapterStore } from '../../shared/queue/adapter-store.js';
import { runtimeCatalog } from '../operation-ports.js';
import { COMPLETED_JOBS_KEPT, queueName } from '../../shared/queue/topology.js';
import { RETRY_POLICY, withMaxAttempts } from '../results/retry-policy.js';
import { processOperationJob, type JobSummary, type PoolContext } from './process-operation-job.js';
import { loadReceiptKey } from '../../operation/receipt-signature.js';
import { startOwnerWatch } from './owner-watch.js';
import { startDiskGuard } from './disk-guard.js';
import { openArtifactStore } from '../../shared/artifacts/open-artifact-store.js';
import { freeBytes } from '../sandbox/gc.js';
import { startWorkerHeartbeat, type RunningHeartbeat } from '../../shared/queue/worker-heartbeat.js';
import { keepHostWalksWarm } from '../sandbox/root-only-paths.js';

export interface PoolOptions {
  /** The host's settings, compiled once (src/operation/settings.ts). */
  settings: OperationSettings;
  redisUrl: string;
  config: QueueConfig;
  runtimes: string[];
  concurrency: number;
  /** Across every worker of a runtime queue (BullMQ global concurrency); unset = no limit. */
  globalConcurrency?: number;
  /** Retention sweep + free-disk floor (disk-guard.ts); unset: none. */
  gc?: GcConfig;
}

export interface RuntimePool {
  workerId: string;
  /** Running operations right now. */
  active: () => string[];
  /** Cancel every running operation now (a second shutdown signal). */
  cancelAll: (reason: string) => void;
  /** Stop taking jobs; after `graceMs` cancel what still runs; resolve when all settled. */
  shutdown: (reason: string, graceMs: number) => Promise<void>;
}

type Bull = typeof import('bullmq');

/** The pool's parts, shared by the steps below. */
interface Pool {
  readonly options: PoolOptions;
  readonly bull: Bull;
  readonly redis: Redis;
  readonly ctx: PoolContext;
  readonly workers: Worker[];
  /** One blocking connection per BullMQ worker. */
  readonly connections: Redis[];
}

export async function startRuntimePool(options: PoolOptions): Promise<RuntimePool> {
  // Which key this worker signs receipts with (never the key), for its heartbeat: uh doctor --redis compares
  // them across the fleet. Loaded (made, for the default) before Redis, so a broken key fails the start at once.
  const receiptKeyId = loadReceiptKey(options.settings.receiptKey, true)?.id ?? null;
  const bull = await import('bullmq');
  const workerId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const redis = await connectRedis(options.redisUrl, {
    name: `uh-worker-${workerId}`,
    cluster: options.config.cluster,
  });
  const pool: Pool = { options, bull, redis, ctx: poolContext(options, redis, workerId), workers: [], connections: [] };
  const subscriber = await subscribeCancels(pool);
  const heartbeat = await startHeartbeat(pool, receiptKeyId);
  const { settings } = options;
  const { logger } = settings;
  const stopWatch = startOwnerWatch({
    redis,
    store: pool.ctx.store,
    runtimes: options.runtimes,
    intervalMs: options.config.heartbeatMs,
    settings,
  });
  for (const runtime of options.runtimes) await startWorker(pool, runtime);
  await Promise.all(pool.workers.map((w) => w.waitUntilReady()));
  keepHostWalksWarm(true); // a job after a pause finds a root host's walk fresh
  const stopGuard = options.gc
    ? startDiskGuard({
        gc: options.gc,
        cacheDir: settings.cacheDir,
        stateDir: settings.stateDir,
        store: pool.ctx.store,
        eventRetentionMs: options.config.eventRetentionMs,
        workers: pool.workers,
        logger,
      })
    : () => undefined;

  const { active } = pool.ctx;
  const cancelAll = (message: string) => {
    for (const [id, controller] of active) {
      logger.warn({ operation_id: id }, 'cancelling on shutdown');
      controller.abort({ kind: 'cancel', message });
    }
  };
  let shuttingDown: Promise<void> | null = null;
  return {
    workerId,
    active: () => [...active.keys()],
    cancelAll,
    shutdown: (reason, graceMs) => {
      stopWatch();
      stopGuard();
      keepHostWalksWarm(false);
      shuttingDown ??= shutdown(pool, { reason, graceMs, cancelAll, heartbeat, subscriber });
      return shuttingDown;
    },
  };
}

function poolContext(options: PoolOptions, redis: Redis, workerId: string): PoolContext {
  const { config } = options;
  return {
    settings: options.settings,
    store: new OperationStore(redis, config.prefix, openArtifactStore(config.artifactStore)),
    worker: { id: workerId, host: hostname(), pid: process.pid },
    artifactCapBytes: config.artifactCapBytes,
    queues: new Map<string, Queue>(),
    active: new Map<string, AbortController>(),
    retryPolicy: withMaxAttempts(RETRY_POLICY, config.retryMaxAttempts),
    quotas: config.tenantQuotas,
    quotaRetryMs: config.quotaRetryMs,
    runtimes: runtimeCatalog(new AdapterStore(redis, config.prefix).source()),
  };
}

/**
 * Cancel from any host: the flag is in the record (checked at claim and before launch); the
 * message reaches the owner while it runs.
 */
async function subscribeCancels(pool: Pool): Promise<Redis> {
  const { store, active } = pool.ctx;
  const { logger } = pool.ctx.settings;
  const subscriber: Redis = pool.redis.duplicate();
  subscriber.on('error', () => undefined);
  await subscriber.subscribe(store.keys.cancelChannel);
  subscriber.on('message', (_channel: string, operationId: string) => {
    const controller = active.get(operationId);
    if (!controller || controller.signal.aborted) return;
    logger.info({ operation_id: operationId }, 'cancel requested: aborting the operation');
    // The reason given to `uh mission cancel --reason` lands in the receipt's outcome message.
    void store
      .get(operationId)
      .catch(() => null)
      .then((record) => {
        if (!controller.signal.aborted)
          controller.abort({
            kind: 'cancel',
            message: `cancelled: ${record?.cancel_requested || 'uh mission cancel'}`,
          });
      });
  });
  return subscriber;
}

/** A key per worker, refreshed while it lives: recover tells a dead owner from a slow one by it. */
function startHeartbeat(pool: Pool, receipt_key_id: string | null): Promise<RunningHeartbeat> {
  const { store, worker, active } = pool.ctx;
  const { config, runtimes, concurrency } = pool.options;
  return startWorkerHeartbeat(pool.redis, store.keys, config.heartbeatMs, () => ({
    ...worker,
    role: 'runtime',
    runtimes,
    concurrency,
    active: [...active.keys()],
    receipt_key_id,
    disk_free_bytes: freeBytes(pool.options.settings.cacheDir),
    ...(pool.options.gc ? { disk_floor_bytes: pool.options.gc.minFreeBytes } : {}),
  }));
}

/** The queue of one runtime and its BullMQ worker, every job through `processOperationJob`. */
async function startWorker(pool: Pool, runtime: string): Promise<void> {
  const { options, ctx, bull } = pool;
  const { config } = options;
  const { logger } = options.settings;
  const { store } = ctx;
  const queue = new bull.Queue(queueName(runtime), { connection: pool.redis, prefix: store.keys.bullPrefix });
  queue.on('error', () => undefined);
  ctx.queues.set(runtime, queue);
  if (options.globalConcurrency) await queue.setGlobalConcurrency(options.globalConcurrency);
  const connection = pool.redis.duplicate();
  pool.connections.push(connection);
  const w = new bull.Worker<OperationJob, JobSummary>(
    queueName(runtime),
    (job, token) => processOperationJob(ctx, job, token),
    {
      connection,
      prefix: store.keys.bullPrefix,
      name: ctx.worker.id,
      concurrency: options.concurrency,
      lockDuration: config.lockMs,
      stalledInterval: config.stalledIntervalMs,
      maxStalledCount: config.maxStalledCount,
      removeOnComplete: COMPLETED_JOBS_KEPT, // as JOB_OPTIONS: the record is the truth
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  );
  w.on('error', (error) => logger.warn({ err: error.message, runtime }, 'worker error'));
  w.on('stalled', (jobId) =>
    logger.warn(
      { job_id: jobId, runtime },
      'stalled job moved back to wait: its next claim marks a started runtime unknown',
    ),
  );
  w.on('failed', (job, error) => {
    // A stalled job past maxStalledCount fails without our processor: settle its record here.
    if (!job?.data?.operation_id) return;
    const data = job.data;
    void store
      .orphaned(
        data.operation_id,
        `the job failed in the queue: ${error.message}`,
        completionOf({ operation_id: data.operation_id, attempt: data.attempt, runtime: data.runtime }),
      )
      .then((state) => state && logger.warn({ operation_id: data.operation_id, state }, 'job failed in the queue'))
      .catch(() => undefined);
  });
  pool.workers.push(w);
}

/** Stop taking jobs; after the grace period cancel what still runs; then close every connection. */
async function shutdown(
  pool: Pool,
  stop: {
    reason: string;
    graceMs: number;
    cancelAll: (message: string) => void;
    heartbeat: RunningHeartbeat;
    subscriber: Redis;
  },
): Promise<void> {
  const { reason, graceMs } = stop;
  const { ctx, redis } = pool;
  ctx.settings.logger.info({ reason, active: [...ctx.active.keys()] }, 'shutting down: no new jobs');
  const closing = Promise.all(pool.workers.map((w) => w.close()));
  // graceMs Infinity (`--grace wait`): running missions end on their own (rolling deploys).
  const timer = Number.isFinite(graceMs)
    ? setTimeout(
        () => stop.cancelAll(`worker shutting down (${reason}); grace period of ${Math.round(graceMs / 1000)} s ended`),
        graceMs,
      )
    : undefined;
  await closing;
  clearTimeout(timer);
  await stop.heartbeat.stop();
  await Promise.all([...ctx.queues.values()].map((q) => q.close().catch(() => undefined)));
  stop.subscriber.disconnect();
  for (const c of pool.connections) c.disconnect();
  redis.disconnect();
}
