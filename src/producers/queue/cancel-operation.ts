/**
 * Cancel an operation from any host: the record's cancel flag (the owning worker aborts its run,
 * kills the runtime's process group and writes a `cancelled` receipt), or, for a job still
 * waiting, its removal and a `cancelled` receipt right away. The reason is kept in the record
 * (`cancel_requested`), an `operation.cancel_requested` event and the receipt's outcome message.
 * Shared by the CLI and the HTTP API.
 */
import type { QueueRecord } from '../../shared/queue/operation-store.js';
import type { ReceiptKeySource } from '../../operation/receipt-signature.js';
import type { QueueClient } from './queue-client.js';

/** What happened, in one phrase: `already finished`, `cancelled (was waiting)`, or `cancel sent …`. */
export async function cancelOperation(
  client: QueueClient,
  record: QueueRecord,
  reason: string,
  keySource: ReceiptKeySource,
): Promise<string> {
  const request = await client.store.requestCancel(record.operation_id, reason);
  if (request.kind === 'settled') return `already ${request.state}`;
  const { eventJson } = await import('../../shared/queue/operation-store.js');
  await client.store.appendEvent(
    record.operation_id,
    eventJson(record.operation_id, 'operation.cancel_requested', { reason }),
  );
  if (request.state === 'queued' && (await cancelWaiting(client, record, reason, keySource)))
    return 'cancelled (was waiting)';
  return 'cancel sent to the worker running it';
}

/** A job still waiting: removed, and the operation ended as cancelled (finishOperation signs its receipt). */
async function cancelWaiting(
  client: QueueClient,
  record: QueueRecord,
  reason: string,
  keySource: ReceiptKeySource,
): Promise<boolean> {
  const queue = await client.queue(record.runtime);
  await queue.remove(record.job_id).catch(() => 0); // 0 when a worker holds it: then its claim sees the flag
  const { synthesizeReceipt } = await import('../../operation/synthesize-receipt.js');
  const { finishOperation } = await import('../../operation/finish-operation.js');
  const receipt = synthesizeReceipt(record, {
    status: 'cancelled',
    raw: 'cancel',
    message: `cancelled while waiting: ${reason}`,
    timed_out: false,
  });
  const target = { kind: 'queue', store: client.store, record, owner: null, allowedStates: ['queued'] } as const;
  return (await finishOperation(target, { receipt, keySource })).settled;
}
