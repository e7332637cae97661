/**
 * Automatic retries of a batch's infrastructure errors (docs/batch.md "Errors apart from
 * failures"): a child that ended `unknown`, lost its worker or was blocked by the host gets a new
 * child operation `<first>.r<n>` (never the same operation again: at most one runtime execution
 * per operation), up to `UH_BATCH_ERROR_RETRIES` (default 2) per slot, recorded in the batch (`retry:<first>`) and
 * enqueued on its runtime queue. Ids are deterministic, so two settlers racing create one retry.
 */
import type { BatchChild } from '../../shared/batch/record.js';
import { trialRow, type ChildInput } from '../../shared/batch/report.js';
import { ID_PATTERN } from '../../shared/contracts/ids.js';
import { MissionSchema } from '../../shared/contracts/mission.js';
import { parseOrThrow } from '../../shared/contracts/zod-issues.js';
import { sha256 } from '../../shared/digest.js';
import type { BatchStore, StoredBatch } from '../../shared/queue/batch-store.js';
import { eventJson, type OperationJob, type OperationStore } from '../../shared/queue/operation-store.js';
import { JOB_OPTIONS, jobOrder, queueName } from '../../shared/queue/topology.js';
import { buildMissionPrompt } from '../../shared/runtime/build-prompt.js';
import { checkHiddenBundle } from '../../operation/hidden-verifier.js';
import { contractDigestOf } from '../../operation/prepare-operation.js';
import { resolveRuntime } from '../../operation/resolve-runtime.js';
import { RUNTIME_CATALOG } from '../operation-ports.js';

/** Whether a child's attempt is over and was an infrastructure error. */
export function isSettledError(child: ChildInput): boolean {
  if (child.state !== 'finished' && child.state !== 'unknown') return false;
  return trialRow(child, {}).error !== null;
}

/**
 * Create the retry's operation (attach when it exists), then `record` it in the batch, then
 * enqueue it: the batch knows the retry before it can complete. False when it cannot be made.
 */
async function enqueueRetry(
  ops: OperationStore,
  child: ChildInput,
  retryId: string,
  stateDir: string,
  record: () => Promise<void>,
): Promise<boolean> {
  const source = await ops.get(child.operation_id);
  if (!source) return false;
  const job = source.job;
  const original = job.mission as BatchChild['mission'];
  const mission = parseOrThrow(
    MissionSchema,
    { ...original, operation_id: retryId, labels: { ...original.labels, 'uh.batch.retry_of': child.operation_id } },
    'retry mission',
  );
  const runtime = await resolveRuntime(mission, job.runtime, stateDir, RUNTIME_CATALOG);
  const hidden = job.hidden_verifier ? checkHiddenBundle(job.hidden_verifier) : null;
  const retry: OperationJob = {
    ...job,
    operation_id: retryId,
    mission,
    contract_digest: contractDigestOf(mission, runtime, job.base_commit, hidden),
    attempt: 1,
  };
  const created = await ops.createOrAttach(retry, {
    mission_id: mission.mission_id,
    prompt_digest: sha256(buildMissionPrompt(mission)),
  });
  if (created.kind === 'conflict') return false;
  if (created.kind === 'created')
    await ops.appendEvents([
      [
        retryId,
        eventJson(retryId, 'operation.queued', {
          runtime: retry.runtime,
          contract_digest: retry.contract_digest,
          base_commit: retry.base_commit,
          batch_id: mission.labels['uh.batch'] ?? null,
          retry_of: child.operation_id,
        }),
      ],
    ]);
  await record();
  const queued = await ops.get(retryId);
  if (!queued || queued.state !== 'queued') return true;
  const { Queue } = await import('bullmq');
  const queue = new Queue(queueName(retry.runtime), { connection: ops.redis, prefix: ops.keys.bullPrefix });
  try {
    await queue.add('operation', queued.job, { ...JOB_OPTIONS, jobId: queued.job_id, ...jobOrder(queued.job) });
  } finally {
    await queue.close().catch(() => undefined);
  }
  return true;
}

/** Create the retries the batch's errored slots are owed; returns how many were made. */
export async function retryErrors(
  ops: OperationStore,
  batches: BatchStore,
  batch: StoredBatch,
  children: readonly ChildInput[],
  stateDir: string,
  /** Retries per task × runtime × trial slot; a slot still erroring after them settles as an error. */
  maxRetries: number,
): Promise<number> {
  let made = 0;
  for (const slot of batch.record.operations) {
    const attempts = batch.retries[slot.operation_id] ?? [];
    const lastId = attempts.at(-1) ?? slot.operation_id;
    const last = children.find((c) => c.operation_id === lastId);
    if (!last || attempts.length >= maxRetries || !isSettledError(last)) continue;
    const retryId = `${slot.operation_id}.r${attempts.length + 1}`;
    if (!ID_PATTERN.test(retryId)) continue;
    const record = () => batches.recordRetries(batch.record.batch_id, slot.operation_id, [...attempts, retryId]);
    if (await enqueueRetry(ops, last, retryId, stateDir, record)) made += 1;
  }
  return made;
}
