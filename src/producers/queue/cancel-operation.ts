/**
 * Cancel an operation from any host: the record's cancel flag (the owning worker aborts its run,
 * kills the runtime's process group and writes a `cancelled` receipt), or, for a job still
 * waiting, its removal and a `cancelled` receipt right away. The reason is kept in the record
 * (`cancel_requested`), an `operation.cancel_requested` event and the receipt's outcome message.
 * Shared by the CLI and the HTTP API.
 */
import type { QueueRecord } from '../../shared/queue/operation-store.js';
import type { QueueClient } from './queue-client.js';

/** What happened, in one phrase: `already finished`, `cancelled (was waiting)`, or `cancel sent …`. */
export async function cancelOperation(client: QueueClient, record: QueueRecord, reason: string): Promise<string> {
  const request = await client.store.requestCancel(record.operation_id, reason);
  if (request.kind === 'settled') return `already ${request.state}`;
  const { eventJson } = await import('../../shared/queue/operation-store.js');
  await client.store.appendEvent(record.operation_id, eventJson(record.operation_id, 'operation.cancel_requested', { reason }));
  if (request.state === 'queued' && (await cancelWaiting(client, record, reason))) return 'cancelled (was waiting)';
  return 'cancel sent to the worker running it';
}

async function cancelWaiting(client: QueueClient, record: QueueRecord, reason: string): Promise<boolean> {
  const queue = await client.queue(record.runtime);
  await queue.remove(record.job_id).catch(() => 0); // 0 when a worker holds it: then its claim sees the flag
  const { synthesizeReceipt } = await import('../../operation/synthesize-receipt.js');
  const { completionOf, eventJson } = await import('../../shared/queue/operation-store.js');
  const receipt = synthesizeReceipt(record, { status: 'cancelled', raw: 'cancel', message: `cancelled while waiting: ${reason}`, timed_out: false });
  return client.store.settle(record.operation_id, {
    owner: null,
    allowedStates: ['queued'],
    record: { state: 'finished', status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code },
    artifacts: { receipt: `${JSON.stringify(receipt, null, 2)}\n` },
    event: eventJson(record.operation_id, 'operation.completed', { status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code }),
    completion: completionOf(record, { state: 'finished', status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code }),
  });
}

