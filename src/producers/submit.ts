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
import { eventJson, type CreateResult, type OperationJob, type QueueRecord } from '../shared/queue/operation-store.js';
import { jobIdFor, jobOrder, queueName } from '../shared/queue/topology.js';
import { AdapterStore } from '../shared/queue/adapter-store.js';
import { prepareOperation, type PrepareOptions, type PreparedOperation } from '../operation/prepare-operation.js';
import { operationPorts } from '../workers/operation-ports.js';
import type { QueueClient } from './queue/queue-client.js';

import { JOB_OPTIONS } from '../shared/queue/topology.js';
import { assertNoClearSecrets } from '../shared/secret-env.js';
export { JOB_OPTIONS };

export interface SubmitResult {
  kind: 'created' | 'attached';
  record: QueueRecord;
  queue: string;
}

/**
 * Where to prepare, and this host's policy (`host`): a mission it refuses is never enqueued;
 * `tenant`: whose operation it is (the API: the token's; the CLI: UH_TENANT), never the mission's say.
 */
type SubmitOptions = PrepareOptions & { tenant?: string };

export async function submitOperation(
  client: QueueClient,
  mission: Mission,
  options: SubmitOptions,
): Promise<SubmitResult> {
  const [result] = await submitOperations(client, [mission], options);
  if (result instanceof OperationConflictError) throw result;
  return result as SubmitResult;
}

/**
 * Submit many missions at once, in a fixed number of Redis round trips whatever their number:
 * every mission is prepared first (a ref shared by several resolves once; a bad one refuses the
 * whole batch before anything is written), then create-or-attach for all in one pipeline, the
 * `operation.queued` events and the records of attached ones in a second, one BullMQ `addBulk`,
 * and the records as they stand in a last one. A conflict is that mission's result (its
 * `OperationConflictError`), the others still go through. Results are in the missions' order.
 */
export async function submitOperations(
  client: QueueClient,
  missions: readonly Mission[],
  options: SubmitOptions,
): Promise<Array<SubmitResult | OperationConflictError>> {
  // The mission is the job's payload (and the record's, and the `mission` artifact): no secret in clear.
  for (const mission of missions) assertNoClearSecrets(mission.sandbox.env);
  // A runtime this host holds no manifest for resolves to the fleet's published one (uh adapter publish).
  const ports = operationPorts(
    { gitFastPath: options.host?.gitFastPath ?? true },
    new AdapterStore(client.redis, client.config.prefix).source(),
  );
  const prepared = await Promise.all(missions.map((mission) => prepareOperation(mission, options, ports)));
  const jobs: OperationJob[] = prepared.map((p) => ({
    operation_id: p.mission.operation_id,
    runtime: p.runtime.runtimeId,
    mission: p.mission,
    base_commit: p.baseCommit,
    contract_digest: p.contractDigest,
    // An operator's manifest (a file, a published one) travels by digest; a built-in default changes
    // only with uh's version, which a rolling upgrade mixes: the contract digest covers its config.
    ...(p.runtime.manifestBuiltIn ? {} : { manifest_digest: p.runtime.manifestDigest }),
    attempt: 1,
    ...(p.hiddenVerifier ? { hidden_verifier: p.hiddenVerifier } : {}),
    ...(options.tenant ? { tenant: options.tenant } : {}),
  }));
  const { store } = client;
  const created = await store.createOrAttachMany(
    jobs.map((job, i) => ({
      job,
      mission_id: (prepared[i] as PreparedOperation).mission.mission_id,
      prompt_digest: (prepared[i] as PreparedOperation).promptDigest,
    })),
  );
  const queuedEvents = jobs
    .filter((_, i) => created[i]?.kind === 'created')
    .map(
      (job) =>
        [
          job.operation_id,
          eventJson(job.operation_id, 'operation.queued', {
            runtime: job.runtime,
            contract_digest: job.contract_digest,
            base_commit: job.base_commit,
          }),
        ] as const,
    );
  const attachedIds = jobs.filter((_, i) => created[i]?.kind === 'attached').map((j) => j.operation_id);
  const [, attachedRecords] = await Promise.all([store.appendEvents(queuedEvents), store.getMany(attachedIds)]);
  const attachedById = new Map(attachedRecords.map((r, i) => [attachedIds[i] as string, r]));
  // A created record is queued with this very job; an attached one is re-added while still queued.
  const toAdd = jobs.flatMap((job, i) => {
    if (created[i]?.kind === 'created') return [{ job, runtime: job.runtime, jobId: jobIdFor(job.operation_id) }];
    const record = attachedById.get(job.operation_id);
    if (created[i]?.kind !== 'attached' || !record || record.state !== 'queued' || record.cancel_requested) return [];
    return [
      {
        job: record.job.attempt === record.attempt ? record.job : { ...record.job, attempt: record.attempt },
        runtime: record.runtime,
        jobId: record.job_id,
      },
    ];
  });
  await enqueue(client, toAdd);
  const records = await store.getMany(jobs.map((j) => j.operation_id));
  return jobs.map((job, i) => {
    const result = created[i] as CreateResult;
    if (result.kind === 'conflict')
      return new OperationConflictError(job.operation_id, result.digest, job.contract_digest);
    const record = records[i] as QueueRecord;
    return { kind: result.kind, record, queue: queueName(record.runtime) };
  });
}

/** One BullMQ `addBulk` per runtime queue (a MULTI each). */
async function enqueue(
  client: QueueClient,
  entries: Array<{ job: OperationJob; runtime: string; jobId: string }>,
): Promise<void> {
  const byRuntime = new Map<string, typeof entries>();
  for (const e of entries) byRuntime.set(e.runtime, [...(byRuntime.get(e.runtime) ?? []), e]);
  await Promise.all(
    [...byRuntime].map(async ([runtime, list]) => {
      const queue = await client.queue(runtime);
      await queue.addBulk(
        list.map((e) => ({
          name: 'operation',
          data: e.job,
          opts: { ...JOB_OPTIONS, jobId: e.jobId, ...jobOrder(e.job) },
        })),
      );
    }),
  );
}
