/**
 * The idempotent producer: validate and prepare (the same `prepareOperation` as an inline run),
 * then create-or-attach our durable operation record in one Redis script, then enqueue on
 * `runtime.<id>` with a job id derived from the operation_id.
 *
 *   same operation_id + same digest  → attach: the existing operation, never a second run
 *                                       (also long after BullMQ removed the job)
 *   same operation_id + other digest → OperationConflictError (exit 2), nothing enqueued
 *
 * Enqueueing is safe to repeat: BullMQ ignores an add whose job id exists, and the worker's claim
 * refuses a record that is not queued. So an attacher re-adds the job while the record is still
 * queued, which repairs a producer that crashed between create and enqueue.
 */
import type { Mission } from '../shared/contracts/mission.js';
import { OperationConflictError } from '../shared/errors.js';
import { eventJson, type OperationJob, type QueueRecord } from '../shared/queue/operation-store.js';
import { queueName } from '../shared/queue/topology.js';
import { prepareOperation } from '../operation/prepare-operation.js';
import { OPERATION_PORTS } from '../workers/operation-ports.js';
import type { QueueClient } from './queue/queue-client.js';

/** Jobs are bookkeeping only (our record is the truth): keep them a day for dashboards. */
export const JOB_OPTIONS = {
  attempts: 1,
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
} as const;

export interface SubmitResult {
  kind: 'created' | 'attached';
  record: QueueRecord;
  queue: string;
}

export async function submitOperation(
  client: QueueClient,
  mission: Mission,
  options: { stateDir: string; cacheDir: string; runtime?: string },
): Promise<SubmitResult> {
  const prepared = await prepareOperation(mission, options, OPERATION_PORTS);
  const id = mission.operation_id;
  const job: OperationJob = {
    operation_id: id,
    runtime: prepared.runtime.runtimeId,
    mission,
    base_commit: prepared.baseCommit,
    contract_digest: prepared.contractDigest,
    attempt: 1,
  };
  const result = await client.store.createOrAttach(job, { mission_id: mission.mission_id, prompt_digest: prepared.promptDigest });
  if (result.kind === 'conflict') throw new OperationConflictError(id, result.digest, prepared.contractDigest);
  if (result.kind === 'created') {
    await client.store.appendEvent(id, eventJson(id, 'operation.queued', { runtime: job.runtime, contract_digest: job.contract_digest, base_commit: job.base_commit }));
  }
  let record = (await client.store.get(id)) as QueueRecord;
  if (record.state === 'queued' && !record.cancel_requested) {
    const queue = await client.queue(record.runtime);
    await queue.add('operation', record.job.attempt === record.attempt ? record.job : { ...record.job, attempt: record.attempt }, { ...JOB_OPTIONS, jobId: record.job_id });
    record = (await client.store.get(id)) as QueueRecord;
  }
  return { kind: result.kind, record, queue: queueName(record.runtime) };
}
