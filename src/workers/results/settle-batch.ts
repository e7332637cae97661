/**
 * Settle a queued batch once every child operation is finished: build the report from the
 * children's receipts, store it (JSON and HTML) in the batch hash and emit one `batch` entry on
 * the outbox (→ `batch.settled` webhook). Called by the batch flow's parent job (all children
 * done) and after every child completion (a child recovered from `unknown` settles the batch
 * later). Idempotent: the first settler wins, later calls change nothing.
 */
import { buildBatchReport } from '../../shared/batch/report.js';
import { renderHtml } from '../../shared/batch/report-html.js';
import type { PriceTable } from '../../shared/prices.js';
import { BatchStore, batchOfOperation, loadBatchChildren } from '../../shared/queue/batch-store.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';
import { retryErrors } from './retry-errors.js';

export type SettleOutcome = 'settled' | 'waiting' | 'retrying' | 'already' | 'missing';

/** Where the results worker finds the runtime manifests (to retry errors); absent: no retries. */
export interface RetryContext {
  stateDir: string;
  /** Retries per slot (0: none; an unknown child then waits for recover). */
  maxRetries: number;
  onError?: (error: unknown) => void;
}

export interface BatchSettled {
  type: 'batch.settled';
  batch_id: string;
  exit_code: number;
  runtimes: Array<{
    runtime: string;
    pass_at_1: number | null;
    pass_at_k: number | null;
    statuses: Record<string, number>;
  }>;
  at: string;
}

export async function settleBatchIfDone(
  ops: OperationStore,
  batchId: string,
  prices: PriceTable,
  retry?: RetryContext,
): Promise<SettleOutcome> {
  const batches = new BatchStore(ops.redis, ops.keys);
  const batch = await batches.get(batchId);
  if (!batch) return 'missing';
  if (batch.settled_at) return 'already';
  const children = await loadBatchChildren(ops, batch.record, batch.retries);
  let retriesLeft = false;
  if (retry && retry.maxRetries > 0) {
    try {
      if ((await retryErrors(ops, batches, batch, children, retry.stateDir, retry.maxRetries)) > 0) return 'retrying';
    } catch (error) {
      retry.onError?.(error);
      retriesLeft = true; // could not retry here: an unknown child waits for recover, as without retries
    }
  }
  // With retries, an error past its bound is settled (a dead owner's unknown child included).
  const current = children.filter((c) => !c.superseded);
  const done = (c: (typeof current)[number]) =>
    c.state === 'finished' || (retry !== undefined && retry.maxRetries > 0 && !retriesLeft && c.state === 'unknown');
  if (!current.every(done)) return 'waiting';
  const report = buildBatchReport(batch.record, children, prices);
  const event: BatchSettled = {
    type: 'batch.settled',
    batch_id: batchId,
    exit_code: report.exit_code,
    runtimes: report.runtimes.map((r) => ({
      runtime: r.runtime,
      pass_at_1: r.pass_at_1,
      pass_at_k: r.pass_at_k,
      statuses: r.statuses,
    })),
    at: report.generated_at,
  };
  const first = await batches.settle(
    batchId,
    'settled',
    JSON.stringify(report),
    renderHtml(report),
    JSON.stringify(event),
  );
  return first ? 'settled' : 'already';
}

/** After a child operation's completion: settle its batch when it was the last one. */
export async function settleBatchOfOperation(
  ops: OperationStore,
  operationId: string,
  prices: PriceTable,
  retry?: RetryContext,
): Promise<SettleOutcome | null> {
  const batchId = await batchOfOperation(ops, operationId);
  return batchId === null ? null : settleBatchIfDone(ops, batchId, prices, retry);
}
