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
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../../shared/logger.js';
import { completionOf, OperationStore, type OperationJob } from '../../shared/queue/operation-store.js';
import type { QueueConfig } from '../../shared/config.js';
import { connectRedis } from '../../shared/queue/redis-connection.js';
import { queueName } from '../../shared/queue/topology.js';
import { RETRY_POLICY, withMaxAttempts } from '../results/retry-policy.js';
import { processOperationJob, type JobSummary, type PoolContext } from './process-operation-job.js';

export interface PoolOptions {
  redisUrl: string;
  config: QueueConfig;
  runtimes: string[];
  concurrency: number;
  /** Across every worker of a runtime queue (BullMQ global concurrency); unset = no limit. */
  globalConcurrency?: number;
  stateDir: string;
  cacheDir: string;
  logger: Logger;
  sandboxKeepHours: number;
  keepSandbox: boolean;
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

export async function startRuntimePool(options: PoolOptions): Promise<RuntimePool> {
  const { Queue: BullQueue, Worker: BullWorker } = await import('bullmq');
  const { config, logger } = options;
  const workerId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const redis = await connectRedis(options.redisUrl, { name: `uh-worker-${workerId}` });
  const store = new OperationStore(redis, config.prefix);
  const worker = { id: workerId, host: hostname(), pid: process.pid };
  const active = new Map<string, AbortController>();
  const queues = new Map<string, Queue>();
  const ctx: PoolContext = {
    store,
    stateDir: options.stateDir,
    cacheDir: options.cacheDir,
    worker,
    logger,
    artifactCapBytes: config.artifactCapBytes,
    sandboxKeepHours: options.sandboxKeepHours,
    keepSandbox: options.keepSandbox,
    queues,
    active,
    retryPolicy: withMaxAttempts(RETRY_POLICY, config.retryMaxAttempts),
  };

  // Cancel from any host: the flag is in the record (checked at claim and before launch); the
  // message reaches the owner while it runs.
  const subscriber: Redis = redis.duplicate();
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
        if (!controller.signal.aborted) controller.abort({ kind: 'cancel', message: `cancelled: ${record?.cancel_requested || 'uh mission cancel'}` });
      });
  });

  const beat = () => redis.set(store.keys.worker(workerId), JSON.stringify({ ...worker, runtimes: options.runtimes, active: [...active.keys()] }), 'PX', config.heartbeatMs * 3).catch(() => undefined);
  await beat();
  const heartbeat = setInterval(beat, config.heartbeatMs);

  const workers: Worker[] = [];
  const connections: Redis[] = [];
  for (const runtime of options.runtimes) {
    const queue = new BullQueue(queueName(runtime), { connection: redis, prefix: store.keys.bullPrefix });
    queue.on('error', () => undefined);
    queues.set(runtime, queue);
    if (options.globalConcurrency) await queue.setGlobalConcurrency(options.globalConcurrency);
    const connection = redis.duplicate();
    connections.push(connection);
    const w = new BullWorker<OperationJob, JobSummary>(queueName(runtime), (job, token) => processOperationJob(ctx, job, token), {
      connection,
      prefix: store.keys.bullPrefix,
      name: workerId,
      concurrency: options.concurrency,
      lockDuration: config.lockMs,
      stalledInterval: config.stalledIntervalMs,
      maxStalledCount: config.maxStalledCount,
      removeOnComplete: { age: 24 * 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    });
    w.on('error', (error) => logger.warn({ err: error.message, runtime }, 'worker error'));
    w.on('stalled', (jobId) => logger.warn({ job_id: jobId, runtime }, 'stalled job moved back to wait: its next claim marks a started runtime unknown'));
    w.on('failed', (job, error) => {
      // A stalled job past maxStalledCount fails without our processor: settle its record here.
      if (!job?.data?.operation_id) return;
      const data = job.data;
      void store
        .orphaned(data.operation_id, `the job failed in the queue: ${error.message}`, completionOf({ operation_id: data.operation_id, attempt: data.attempt, runtime: data.runtime }))
        .then((state) => state && logger.warn({ operation_id: data.operation_id, state }, 'job failed in the queue'))
        .catch(() => undefined);
    });
    workers.push(w);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));

  let shuttingDown: Promise<void> | null = null;
  const cancelAll = (message: string) => {
    for (const [id, controller] of active) {
      logger.warn({ operation_id: id }, 'cancelling on shutdown');
      controller.abort({ kind: 'cancel', message });
    }
  };
  return {
    workerId,
    active: () => [...active.keys()],
    cancelAll,
    shutdown: (reason, graceMs) => {
      shuttingDown ??= (async () => {
        logger.info({ reason, active: [...active.keys()] }, 'shutting down: no new jobs');
        const closing = Promise.all(workers.map((w) => w.close()));
        const timer = setTimeout(() => cancelAll(`worker shutting down (${reason}); grace period of ${Math.round(graceMs / 1000)} s ended`), graceMs);
        await closing;
        clearTimeout(timer);
        clearInterval(heartbeat);
        await redis.del(store.keys.worker(workerId)).catch(() => undefined);
        await Promise.all([...queues.values()].map((q) => q.close().catch(() => undefined)));
        subscriber.disconnect();
        for (const c of connections) c.disconnect();
        redis.disconnect();
      })();
      return shuttingDown;
    },
  };
}
