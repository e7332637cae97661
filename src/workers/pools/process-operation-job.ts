/**
 * The processor of one operation job: claim the record, run the shared pipeline
 * (`executeOperation`) with queue hooks, end the operation. Order of writes:
 *
 *   claim (queued → running, owner = this worker's token; a started runtime → unknown, stop)
 *   → prepare on this host (a failure ends the operation: finishOperation)
 *   → pipeline: events to the operation's stream as they happen; "runtime started" persisted
 *     atomically (owner-checked) right before launch
 *   → the end hook, once the receipt is built: a NEW attempt per retry policy (no receipt, no
 *     final event), else finishOperation: the signed receipt, record, artifacts, the final event
 *     and the outbox entry in one owner-checked script
 *
 * The job itself never fails for a mission's outcome (BullMQ must not retry it); it returns a
 * summary that BullMQ publishes as its `completed` event.
 */
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import type { RuntimeCatalog } from '../../operation/ports.js';
import type { Job, Queue } from 'bullmq';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { UhError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import {
  completionOf,
  eventJson,
  type OperationJob,
  type OperationStore,
  type TenantQuotas,
} from '../../shared/queue/operation-store.js';
import type { QueueRecord } from '../../shared/queue/queue-record.js';
import { jobIdFor, jobOrder, tenantOf } from '../../shared/queue/topology.js';
import { executeOperation, type ExecuteResult } from '../execute-operation.js';
import { collectArtifacts } from '../results/store-artifacts.js';
import { retryDecision, type RetryRule } from '../results/retry-policy.js';
import { synthesizeReceipt } from '../../operation/synthesize-receipt.js';
import { redisJournal } from './redis-journal.js';
import { claimOperationDir, operationDir, operationsRoot } from '../../operation/operation-files.js';
import type { EventLog } from '../state/event-log.js';
import { eventPublisher } from './event-publisher.js';
import { settleFromRuntime } from './owner-watch.js';
import { finishOperation, signedReceipt, type FilesTarget } from '../../operation/finish-operation.js';
import { outcomeOfError } from '../../operation/outcome-of-error.js';
import { hostSettings, type OperationSettings } from '../../operation/settings.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface PoolContext {
  /** The host's settings, compiled once (src/operation/settings.ts). */
  settings: OperationSettings;
  store: OperationStore;
  worker: { id: string; host: string; pid: number };
  artifactCapBytes: number;
  /** Queues by runtime id, to enqueue a retry attempt. */
  queues: Map<string, Queue>;
  /** The abort controller of every operation this process runs (cancel and shutdown use them). */
  active: Map<string, AbortController>;
  /** Which settled outcomes run again as a new attempt (results/retry-policy.ts). */
  retryPolicy: readonly RetryRule[];
  /** Per-tenant limits on running operations (UH_TENANT_QUOTAS), checked atomically at claim; null: none. */
  quotas: TenantQuotas | null;
  /** How long a job over its tenant's quota is delayed before it is tried again (UH_TENANT_QUOTA_RETRY_MS). */
  quotaRetryMs: number;
  /** The registered runtimes with the fleet's published manifests (read from Redis at each job). */
  runtimes: RuntimeCatalog;
}

export interface JobSummary {
  operation_id: string;
  outcome: 'finished' | 'retry_scheduled' | 'unknown' | 'settled' | 'stale' | 'missing' | 'lost' | 'over_quota';
  status?: string;
  verdict?: string;
  exit_code?: number;
}

/** A fresh local operation dir: an earlier attempt's dir on this host is moved aside, never deleted. */
function freshDir(stateDir: string, operationId: string): void {
  if (claimOperationDir(stateDir, operationId)) return;
  const aside = join(operationsRoot(stateDir), '.attempts');
  makeDir(aside);
  renameSync(operationDir(stateDir, operationId), join(aside, `${operationId}.${Date.now()}`));
  if (!claimOperationDir(stateDir, operationId))
    throw new UhError('internal', `cannot claim ${operationDir(stateDir, operationId)}`);
}

/** One job's run, shared by the steps below. */
interface JobRun {
  readonly ctx: PoolContext;
  readonly data: OperationJob;
  readonly id: string;
  /** This worker's claim on the record: every write is owner-checked against it. */
  readonly owner: string;
  /** Aborted by cancel and shutdown; reaches prepare (git) and the pipeline. */
  readonly controller: AbortController;
  /** Bound to runtime and worker: the pipeline adds operation_id itself. */
  readonly log: Logger;
}

type Prepared = Awaited<ReturnType<typeof import('./prepare-job.js').prepareJob>>;

export async function processOperationJob(
  ctx: PoolContext,
  job: Job<OperationJob>,
  token: string | undefined,
): Promise<JobSummary> {
  const id = job.data.operation_id;
  const log = ctx.settings.logger.child({ runtime: job.data.runtime, worker: ctx.worker.id });
  const run: JobRun = {
    ctx,
    data: job.data,
    id,
    owner: `${ctx.worker.id}/${job.id}/${token ?? ''}`,
    controller: new AbortController(),
    log,
  };
  const summary = await processClaimed(run, job);
  if (summary.outcome === 'over_quota') return delayOverQuota(run, job, token);
  // One info line per settle (docs/observability.md): the job's outcome as bull-board shows it.
  log.info({ ...summary, attempt: job.data.attempt }, 'settle');
  return summary;
}

/**
 * Its tenant is at its quota: the job goes back to BullMQ's delayed set (same priority), never
 * failed, and is tried again after UH_TENANT_QUOTA_RETRY_MS (±25 %, so waiting jobs spread out);
 * meanwhile this slot takes the next job, another tenant's included.
 */
async function delayOverQuota(run: JobRun, job: Job<OperationJob>, token: string | undefined): Promise<never> {
  const { DelayedError } = await import('bullmq');
  const wait = Math.round(run.ctx.quotaRetryMs * (0.75 + Math.random() * 0.5));
  run.log.debug({ operation_id: run.id, tenant: tenantOf(job.data), delay_ms: wait }, 'tenant at its quota: delayed');
  await job.moveToDelayed(Date.now() + wait, token);
  throw new DelayedError();
}

async function processClaimed(run: JobRun, job: Job<OperationJob>): Promise<JobSummary> {
  const { ctx, id } = run;
  ctx.active.set(id, run.controller);
  try {
    const refused = await claimJob(run, job.id as string);
    if (refused) return refused;
    const record = await ctx.store.get(id);
    if (!record) return { operation_id: id, outcome: 'missing' };
    const prepared = await prepareOrSettle(run, record);
    if ('outcome' in prepared) return prepared;
    freshDir(ctx.settings.stateDir, id);
    const result = await runPipeline(run, prepared, record);
    if (result.state === 'unknown') {
      // The runtime could not prove whether its work was dispatched: never re-run, wait for recover.
      await ctx.store.orphaned(id, result.reason, completionOf(record, { state: 'unknown' }), run.owner);
      return { operation_id: id, outcome: 'unknown' };
    }
    return summaryOf(run, result);
  } finally {
    ctx.active.delete(id);
  }
}

/** Claim the record for this worker; a summary when this job must not run. */
async function claimJob(run: JobRun, jobId: string): Promise<JobSummary | null> {
  const { ctx, data, id } = run;
  const claim = await ctx.store.claim(
    id,
    run.owner,
    ctx.worker,
    jobId,
    completionOf({ operation_id: id, attempt: data.attempt, runtime: data.runtime }),
    ctx.quotas,
  );
  if (claim.kind === 'unknown') {
    run.log.warn(
      { operation_id: id },
      'job re-delivered after its runtime started: operation is now unknown, not run again',
    );
    // As the owner watch would have: a runtime with its own records settles it from them.
    if ((await settleFromRuntime(ctx, id)) === 'finished') return { operation_id: id, outcome: 'settled' };
  }
  if (claim.kind !== 'run') return { operation_id: id, outcome: claim.kind === 'settled' ? 'settled' : claim.kind };
  if (claim.cancelReason) run.controller.abort({ kind: 'cancel', message: `cancelled: ${claim.cancelReason}` });
  run.log.info({ operation_id: id, attempt: data.attempt, job_id: jobId }, 'claim');
  return null;
}

/** Prepare on this host; a failure (or a cancel that stopped git) ends the operation with its receipt. */
async function prepareOrSettle(run: JobRun, record: QueueRecord): Promise<Prepared | JobSummary> {
  const { ctx, id } = run;
  try {
    const { prepareJob } = await import('./prepare-job.js');
    const host = hostSettings(ctx.settings);
    return await prepareJob(run.data, {
      stateDir: ctx.settings.stateDir,
      cacheDir: ctx.settings.cacheDir,
      signal: run.controller.signal,
      host,
      runtimes: ctx.runtimes,
    });
  } catch (error) {
    const receipt = synthesizeReceipt(record, outcomeOfError(error, run.controller.signal));
    const target = { kind: 'queue', store: ctx.store, record, owner: run.owner, allowedStates: ['running'] } as const;
    await finishOperation(target, { receipt, keySource: ctx.settings.receiptKey });
    return {
      operation_id: id,
      outcome: 'finished',
      status: receipt.status,
      verdict: receipt.verdict,
      exit_code: receipt.exit_code,
    };
  }
}

/** The shared pipeline with the queue's hooks: events to Redis, owner-checked state writes. */
async function runPipeline(run: JobRun, prepared: Prepared, record: QueueRecord): Promise<ExecuteResult> {
  const { ctx, id, owner, controller } = run;
  const { store } = ctx;
  let eventLog: EventLog | null = null;
  const publisher = eventPublisher(store, id);
  // The last owner-checked patch mirrored to the record: an unchanged one is not written again.
  let mirrored = JSON.stringify({
    state: 'running',
    sandbox_path: null,
    session_id: null,
    thread_id: null,
    turn_id: null,
  });
  const result = await executeOperation({
    prepared,
    // The pipeline's log lines carry this job's runtime and worker (docs/observability.md).
    settings: { ...ctx.settings, logger: run.log },
    mode: 'queue',
    attempt: run.data.attempt,
    tenant: tenantOf(run.data),
    signal: controller.signal,
    hooks: {
      journal: redisJournal(store, id, owner),
      onEventLog: (log) => {
        eventLog = log;
        log.subscribe(publisher.publish);
      },
      beforeRuntime: async () => {
        const gate = await store.markRuntimeStarted(id, owner);
        if (gate === 'cancelled') controller.abort({ kind: 'cancel', message: 'cancelled before the runtime started' });
        if (gate === 'lost')
          throw new UhError('conflict', `worker ${ctx.worker.id} no longer owns ${id}: the runtime is not started`);
        run.log.info({ operation_id: id }, 'runtime start');
      },
      onState: async (state, rec) => {
        // Ended in one script each: finished with its artifacts, unknown with its event.
        if (state === 'finished' || state === 'unknown') return;
        const patch = {
          state,
          sandbox_path: rec.sandbox_path,
          session_id: rec.session_id ?? null,
          thread_id: rec.thread_id ?? null,
          turn_id: rec.turn_id ?? null,
        };
        // The claim wrote `running`; the gate (beforeRuntime) wrote runtime_started: nothing new, no round trip.
        if (JSON.stringify(patch) === mirrored) return;
        mirrored = JSON.stringify(patch);
        await store.updateIfOwner(id, owner, patch);
      },
      end: async (receipt, local) => {
        // Every event so far is in the stream before the end's own event.
        await (eventLog as EventLog | null)?.flush();
        await publisher.flush();
        return (await scheduleRetry(run, receipt, local.dir)) ?? (await endInRedis(run, record, receipt, local));
      },
    },
  });
  await (eventLog as EventLog | null)?.flush();
  await publisher.flush();
  return result;
}

/** A NEW attempt when the retry policy says so (and this worker still owns the record): no receipt, no final event. */
async function scheduleRetry(run: JobRun, receipt: Receipt, dir: string): Promise<ExecuteResult | null> {
  const { ctx, data, id } = run;
  const decision = retryDecision(receipt.outcome, data.attempt, ctx.retryPolicy);
  if (!decision.retry) return null;
  const attempt = data.attempt + 1;
  const jobId = jobIdFor(id, attempt);
  const retryAt = new Date(Date.now() + decision.delayMs);
  // The attempt's receipt is kept in the record's attempt list, signed like every receipt.
  const previous = `${JSON.stringify(signedReceipt(receipt, ctx.settings.receiptKey), null, 2)}\n`;
  if (!(await ctx.store.nextAttempt(id, run.owner, attempt, jobId, previous, retryAt))) return null;
  await ctx.store.appendEvent(
    id,
    eventJson(id, 'operation.queued', { attempt, delay_ms: decision.delayMs, reason: decision.rule }),
  );
  const queue = ctx.queues.get(data.runtime);
  await queue?.add(
    'operation',
    { ...data, attempt },
    {
      jobId,
      delay: decision.delayMs,
      ...jobOrder(data),
    },
  );
  return { state: 'retry', attempt, dir };
}

/** The end of a queued operation: its local copy, then record, artifacts and outbox entry in one owner-checked script. */
async function endInRedis(
  run: JobRun,
  record: QueueRecord,
  receipt: Receipt,
  local: FilesTarget,
): Promise<ExecuteResult> {
  const { ctx } = run;
  const artifacts = collectArtifacts(local.dir, ctx.artifactCapBytes);
  const target = {
    kind: 'queue',
    store: ctx.store,
    record,
    owner: run.owner,
    allowedStates: ['running', 'verifying'],
    artifacts,
    local,
  } as const;
  const ended = await finishOperation(target, { receipt, keySource: ctx.settings.receiptKey });
  return {
    state: 'finished',
    receipt: ended.receipt,
    receiptPath: ended.receiptPath,
    dir: local.dir,
    settled: ended.settled,
  };
}

/** The job's summary, as BullMQ publishes it in its `completed` event. */
function summaryOf(run: JobRun, result: Exclude<ExecuteResult, { state: 'unknown' }>): JobSummary {
  const { id } = run;
  if (result.state === 'retry') return { operation_id: id, outcome: 'retry_scheduled' };
  const { receipt } = result;
  if (!result.settled) {
    run.log.warn(
      { operation_id: id },
      'the record moved on while this worker ran (lost ownership): receipt kept locally only',
    );
    return { operation_id: id, outcome: 'lost', status: receipt.status };
  }
  return {
    operation_id: id,
    outcome: 'finished',
    status: receipt.status,
    verdict: receipt.verdict,
    exit_code: receipt.exit_code,
  };
}
