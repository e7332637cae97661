/**
 * The results worker (`uh worker start --results`): what happens after an operation has ended.
 * The runtime worker ends every operation through finishOperation (the signed receipt, the final
 * record, `operation.completed` and the outbox entry in one script); this worker reads the outbox
 * and, per completion: the webhook, the batch it belongs to, automatic promotion. It also runs the
 * batch queue's worker and the dead-owner watch (a dead owner's operation is declared and, when
 * its runtime can say how it ended, finished through the same module). It acts only on receipts
 * whose signature it has verified (completion-consumer.ts): an outbox entry or record alone is
 * never enough to promote, push, deliver a webhook or settle a batch.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { UhConfig } from '../../shared/config.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { connectRedis } from '../../shared/queue/redis-connection.js';
import { startWorkerHeartbeat } from '../../shared/queue/worker-heartbeat.js';
import { OperationStore } from '../../shared/queue/operation-store.js';
import { openArtifactStore } from '../../shared/artifacts/open-artifact-store.js';
import { trustReceipt } from '../../operation/trusted-receipt.js';
import type { OperationSettings } from '../../operation/settings.js';
import { startOwnerWatch } from '../pools/owner-watch.js';
import { promoteAfterCompletion } from '../promotion/auto-promote.js';
import { startBatchWorker, settleBatchAfter } from './batch-worker.js';
import { ensureResultsGroup, runCompletionConsumer } from './completion-consumer.js';

/** One line of the worker's output (`uh worker: <event> k=v …`, or JSON with --json). */
export type ResultsEvent = (event: string, data: Record<string, unknown>) => void;

export interface ResultsWorkerOptions {
  settings: OperationSettings;
  queue: UhConfig['queue'];
  redisUrl: string;
  /** The consumer name in the outbox's group (default: this host's name). */
  consumer?: string;
  signal: AbortSignal;
  onEvent: ResultsEvent;
}

export async function startResultsWorker(o: ResultsWorkerOptions): Promise<{ done: Promise<void> }> {
  const { settings, queue, onEvent } = o;
  const { logger } = settings;
  const redis = await connectRedis(o.redisUrl, { name: 'uh-results', cluster: queue.cluster });
  const store = new OperationStore(redis, queue.prefix, openArtifactStore(queue.artifactStore));
  await ensureResultsGroup(redis, store.keys.outbox);
  // Listed like any worker (role results): its death is seen by /v1/workers, the metrics and uh doctor --redis.
  const workerId = `${hostname()}-${process.pid}-results-${randomBytes(3).toString('hex')}`;
  const heartbeat = await startWorkerHeartbeat(redis, store.keys, queue.heartbeatMs, () => ({
    id: workerId,
    role: 'results',
    host: hostname(),
    pid: process.pid,
    runtimes: [],
    active: [],
    receipt_key_id: null,
  }));
  // Dead workers noticed in seconds: operations whose owner's heartbeat expired become unknown.
  o.signal.addEventListener('abort', startOwnerWatch({ redis, store, intervalMs: queue.heartbeatMs, settings }));
  const consumer = o.consumer ?? hostname();
  // Errors are retried with this host's runtime manifests (docs/batch.md "Errors apart from failures").
  const retry = {
    stateDir: settings.stateDir,
    maxRetries: o.queue.batchErrorRetries,
    onError: (error: unknown) => logger.warn({ error: String(error) }, 'batch retry not possible here'),
  };
  const batchWorker = await startBatchWorker(store, settings.prices, logger, retry);
  const settleBatch = settleBatchAfter(store, settings.prices, logger, retry);
  const delivery = (d: { id: string; webhook: { ok: boolean; error: string | null } | null }) => ({
    delivery: d.id,
    webhook: d.webhook ? (d.webhook.ok ? 'delivered' : `failed:${d.webhook.error}`) : 'off',
  });
  onEvent('results-ready', { worker: workerId, consumer, webhook: queue.webhook ? 'on' : 'off', pid: process.pid });
  const done = runCompletionConsumer({
    store,
    consumer,
    webhook: queue.webhook,
    logger,
    signal: o.signal,
    onCompletion: (c, d) =>
      onEvent('completion', {
        operation_id: c.operation_id,
        state: c.state,
        status: c.status ?? '-',
        exit_code: c.exit_code,
        ...delivery(d),
      }),
    verify: (text) => trustReceipt(text, settings.receiptKey),
    afterCompletion: async (c, receipt) => {
      await settleBatch(c);
      if (receipt) await promoteCompletion(store, receipt, settings, onEvent);
    },
    onBatchSettled: (b, d) =>
      onEvent('batch-settled', { batch_id: b.batch_id, exit_code: b.exit_code, ...delivery(d) }),
  }).finally(async () => {
    await heartbeat.stop();
    await batchWorker.close().catch(() => undefined);
    redis.disconnect();
  });
  return { done };
}

/** Automatic promotion (mission `promotion: branch`) of a verified completion, reported on the worker's output. */
async function promoteCompletion(
  store: OperationStore,
  receipt: Receipt,
  settings: OperationSettings,
  onEvent: ResultsEvent,
): Promise<void> {
  const { logger } = settings;
  const context = { cacheDir: settings.cacheDir, logger, env: settings.env, receiptKey: settings.receiptKey };
  const record = await promoteAfterCompletion(store, receipt, context).catch((error: unknown) => {
    logger.warn({ operation_id: receipt.operation_id, err: String(error) }, 'automatic promotion failed');
    return null;
  });
  if (!record) return;
  const { decision, branch } = record;
  onEvent('promotion', {
    operation_id: receipt.operation_id,
    decision,
    branch,
    commit: record.commit ?? '-',
    reason: record.reason ?? '-',
  });
}
