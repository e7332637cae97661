/**
 * Submit a batch to the queue as one BullMQ flow: the parent `batch.<id>` on the `batch` queue
 * (processed by the results worker once every child job has completed), each runtime × trial a
 * child operation job on `runtime.<id>` with its own idempotent operation record, run by the
 * ordinary pools. Every child is prepared (validated) before anything is written; the batch
 * record is create-once (same batch attaches, another batch under the id is a conflict).
 */
import type { BatchChild, BatchPlan, BatchRecord } from '../../shared/batch/record.js';
import { OperationConflictError } from '../../shared/errors.js';
import { BatchStore } from '../../shared/queue/batch-store.js';
import { eventJson, type OperationJob } from '../../shared/queue/operation-store.js';
import { BATCH_QUEUE, batchJobId, jobOrder, queueName } from '../../shared/queue/topology.js';
import { prepareOperation, type PrepareOptions } from '../../operation/prepare-operation.js';
import { operationPorts } from '../../workers/operation-ports.js';
import { JOB_OPTIONS } from '../submit.js';
import type { QueueClient } from './queue-client.js';
import { assertNoClearSecrets } from '../../shared/secret-env.js';

export interface BatchSubmitted {
  kind: 'created' | 'attached';
  record: BatchRecord;
  /** Whether the flow was added now (a new batch, or an attach that repaired a missing flow). */
  enqueued: boolean;
}

type BatchSubmitOptions = PrepareOptions & { tenant?: string };

async function prepareChildren(children: readonly BatchChild[], options: BatchSubmitOptions) {
  const jobs: Array<{ job: OperationJob; prompt_digest: string; mission_id: string }> = [];
  for (const child of children) {
    const prepared = await prepareOperation(
      child.mission,
      options,
      operationPorts({ gitFastPath: options.host?.gitFastPath ?? true }),
    );
    jobs.push({
      job: {
        operation_id: child.mission.operation_id,
        runtime: prepared.runtime.runtimeId,
        mission: child.mission,
        base_commit: prepared.baseCommit,
        contract_digest: prepared.contractDigest,
        attempt: 1,
        ...(prepared.hiddenVerifier ? { hidden_verifier: prepared.hiddenVerifier } : {}),
        ...(options.tenant ? { tenant: options.tenant } : {}),
        // A batch's children queue behind CI and normal missions unless the mission says otherwise.
        priority: child.mission.priority ?? 'batch',
      },
      prompt_digest: prepared.promptDigest,
      mission_id: child.mission.mission_id,
    });
  }
  return jobs;
}

export async function submitBatch(
  client: QueueClient,
  plan: BatchPlan,
  options: BatchSubmitOptions,
): Promise<BatchSubmitted> {
  // the batch record and every child's payload live in Redis
  for (const child of plan.children) assertNoClearSecrets(child.mission.sandbox.env);
  const jobs = await prepareChildren(plan.children, options);
  const batchId = plan.record.batch_id;
  const batches = new BatchStore(client.redis, client.store.keys);
  const { kind, batch } = await batches.createOrAttach({ ...plan.record, mode: 'queue' });
  const children = [];
  for (const { job, prompt_digest, mission_id } of jobs) {
    const created = await client.store.createOrAttach(job, { mission_id, prompt_digest });
    if (created.kind === 'conflict')
      throw new OperationConflictError(job.operation_id, created.digest, job.contract_digest);
    if (created.kind === 'created')
      await client.store.appendEvent(
        job.operation_id,
        eventJson(job.operation_id, 'operation.queued', {
          runtime: job.runtime,
          contract_digest: job.contract_digest,
          base_commit: job.base_commit,
          batch_id: batchId,
        }),
      );
    const record = await client.store.get(job.operation_id);
    if (record && record.state === 'queued' && !record.cancel_requested) {
      children.push({
        name: 'operation',
        queueName: queueName(record.runtime),
        data: record.job,
        prefix: client.store.keys.bullPrefix,
        opts: { ...JOB_OPTIONS, jobId: record.job_id, ...jobOrder(record.job), ignoreDependencyOnFailure: true },
      });
    }
  }
  let enqueued = false;
  const parent = await (await client.queueNamed(BATCH_QUEUE)).getJob(batchJobId(batch.record.batch_id));
  if (batch.state === 'running' && !parent) {
    const { FlowProducer } = await import('bullmq');
    const flow = new FlowProducer({ connection: client.redis, prefix: client.store.keys.bullPrefix });
    flow.on('error', () => undefined);
    try {
      await flow.add({
        name: 'batch',
        queueName: BATCH_QUEUE,
        data: { batch_id: batch.record.batch_id },
        prefix: client.store.keys.bullPrefix,
        opts: { jobId: batchJobId(batch.record.batch_id), removeOnComplete: { age: 7 * 24 * 3600 } },
        children,
      });
      enqueued = true;
    } finally {
      await flow.close().catch(() => undefined);
    }
  }
  return { kind, record: batch.record, enqueued };
}
