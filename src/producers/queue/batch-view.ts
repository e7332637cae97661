/**
 * A queued batch as the CLI and the HTTP API show it, from any host: its record and state and
 * the live report built from the children's receipts in Redis. For the API routes
 * `GET /v1/batches/:id` (→ `batchView`) and `GET /v1/batches/:id/report.html`
 * (→ `batchReportHtml`): an unknown id throws `not_found` (404).
 */
import { buildBatchReport, parseK, type BatchReport } from '../../shared/batch/report.js';
import { renderHtml } from '../../shared/batch/report-html.js';
import { apiTrialLinks } from '../../shared/batch/report-links.js';
import type { PriceTable } from '../../shared/prices.js';
import { BatchStore, loadBatchChildren } from '../../shared/queue/batch-store.js';
import type { QueueClient } from './queue-client.js';

export interface BatchView {
  batch_id: string;
  state: 'running' | 'settled' | 'cancelled';
  settled_at: string | null;
  report: BatchReport;
}

/** `k`: the k of pass@k (`--k`, `?k=`), checked against the trial count; default the trial count. */
export async function batchView(
  client: QueueClient,
  batchId: string,
  prices: PriceTable,
  k?: unknown,
): Promise<BatchView> {
  const batch = await new BatchStore(client.redis, client.store.keys).require(batchId);
  const children = await loadBatchChildren(client.store, batch.record, batch.retries);
  const report = buildBatchReport(batch.record, children, prices, new Date(), parseK(k, batch.record.trials));
  return { batch_id: batch.record.batch_id, state: batch.state, settled_at: batch.settled_at, report };
}

export async function batchReportHtml(
  client: QueueClient,
  batchId: string,
  prices: PriceTable,
  k?: unknown,
): Promise<string> {
  // Served by the API itself: each trial links to its event stream and dashboard page on this server.
  return renderHtml((await batchView(client, batchId, prices, k)).report, { links: apiTrialLinks('') });
}
