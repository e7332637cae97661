/**
 * The one place an operation ends. Every path calls it: the pipeline (inline, and queued once the
 * pool has decided there is no retry), a preparation that failed on the worker, a cancel while
 * queued, a dead owner settled from its runtime's records, and `uh mission recover` (queue and
 * inline). BullMQ's `moveToCompleted`/`moveToFailed` and graphile-worker's injected
 * `completeJob`/`failJob` are the model: nothing else writes a receipt or a final state.
 *
 *   sign the receipt (every path, one key source)
 *   → files: receipt.json (once), `operation.completed` in events.jsonl, operation.json finished
 *   → queue: the local copy as above when the operation ran here (its event not published twice),
 *            then record + artifacts (the receipt among them) + `operation.completed` + the
 *            outbox entry in ONE owner-checked script; false when the record moved on
 */
import type { Receipt } from '../shared/contracts/receipt.js';
import type { EventType, UhEvent } from '../shared/contracts/event.js';
import { completionOf, eventJson, type OperationStore, type QueueRecord } from '../shared/queue/operation-store.js';
import { writeReceiptOnce, writeRecord, type OperationRecord } from './operation-files.js';
import { loadReceiptKey, signReceipt, type ReceiptKeySource } from './receipt-signature.js';
import { UhError } from '../shared/errors.js';

/** Where an operation that ran on this host keeps its files. */
export interface FilesTarget {
  kind: 'files';
  stateDir: string;
  /** The operation dir (receipt.json goes here). */
  dir: string;
  /** The local record: patched to `finished` and written atomically. */
  record: OperationRecord;
  /**
   * The operation's event log: `operation.completed` is appended to it. A queued operation's
   * local log appends without publishing (the settle script publishes the same event).
   */
  events: { append: (type: EventType, data: Record<string, unknown>) => UhEvent | void };
}

/** The operation's record in Redis, the source of truth for a queued operation. */
export interface QueueTarget {
  kind: 'queue';
  store: OperationStore;
  record: Pick<QueueRecord, 'operation_id' | 'attempt' | 'runtime'>;
  /** The claim that must still hold (null: a producer or a watch, checked by state only). */
  owner: string | null;
  /** The states the record may be in for this ending to apply. */
  allowedStates: readonly string[];
  /** The operation's other artifacts (diff, logs, mission), stored with the receipt (in the store's, when the store has one). */
  artifacts?: Record<string, string>;
  /** The local copy, when the operation ran on this host. */
  local?: FilesTarget;
}

export interface FinishRequest {
  /** The receipt as built (src/operation/build-receipt.ts); signed here. */
  receipt: Receipt;
  keySource: ReceiptKeySource;
  /** Extra fields of `operation.completed` (e.g. `recovered: true`). */
  event?: Record<string, unknown>;
}

export interface FinishResult {
  receipt: Receipt;
  /** The local receipt.json, when one was written. */
  receiptPath: string | null;
  /** False when a queued record had moved on (lost ownership, already settled): nothing written there. */
  settled: boolean;
}

/** The receipt signed with the host's key: every receipt uh writes, attempts included. */
export function signedReceipt(receipt: Receipt, keySource: ReceiptKeySource): Receipt {
  const key = loadReceiptKey(keySource, true);
  if (!key) throw new UhError('internal', 'no receipt key', { hint: 'set UH_RECEIPT_KEY or UH_RECEIPT_KEY_FILE' });
  return signReceipt(receipt, key);
}

export async function finishOperation(
  target: FilesTarget | QueueTarget,
  request: FinishRequest,
): Promise<FinishResult> {
  const receipt = signedReceipt(request.receipt, request.keySource);
  const summary = { status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code, ...request.event };
  if (target.kind === 'files') {
    const local = finishFiles(target, receipt, summary);
    return { receipt, receiptPath: local.path, settled: true };
  }
  const local = target.local ? finishFiles(target.local, receipt, summary) : null;
  const event = local?.event
    ? JSON.stringify(local.event)
    : eventJson(target.record.operation_id, 'operation.completed', summary);
  return { receipt, receiptPath: local?.path ?? null, settled: await finishQueued(target, receipt, event) };
}

function finishFiles(
  target: FilesTarget,
  receipt: Receipt,
  summary: Record<string, unknown>,
): { path: string; event: UhEvent | null } {
  const path = writeReceiptOnce(target.dir, receipt);
  const event = target.events.append('operation.completed', { ...summary, receipt: path }) ?? null;
  const { status, verdict, exit_code } = receipt;
  Object.assign(target.record, { state: 'finished', status, verdict, exit_code, updated_at: new Date().toISOString() });
  writeRecord(target.stateDir, target.record);
  return { path, event };
}

async function finishQueued(target: QueueTarget, receipt: Receipt, event: string): Promise<boolean> {
  const finished = {
    state: 'finished',
    status: receipt.status,
    verdict: receipt.verdict,
    exit_code: receipt.exit_code,
  } as const;
  return target.store.settle(target.record.operation_id, {
    owner: target.owner,
    allowedStates: [...target.allowedStates],
    record: finished,
    artifacts: { ...target.artifacts, receipt: `${JSON.stringify(receipt, null, 2)}\n` },
    event,
    completion: completionOf(target.record, finished),
    attempt: target.record.attempt,
  });
}
