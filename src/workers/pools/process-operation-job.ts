/**
 * The processor of one operation job: claim the record, run the shared pipeline
 * (`executeOperation`) with queue hooks, settle the record. Order of writes:
 *
 *   claim (queued → running, owner = this worker's token; a started runtime → unknown, stop)
 *   → prepare on this host → pipeline: events to the operation's stream as they happen;
 *     "runtime started" persisted atomically (owner-checked) right before launch
 *   → settle (record + artifacts + outbox entry, one script) or a NEW attempt per retry policy
 *
 * The job itself never fails for a mission's outcome (BullMQ must not retry it); it returns a
 * summary that BullMQ publishes as its `completed` event.
 */
import type { PriceTable } from '../../shared/prices.js';
import type { PoolSettings } from '../sandbox/sandbox-pool.js';
import { renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Job, Queue } from 'bullmq';
import type { Outcome } from '../../shared/contracts/runtime-result.js';
import { errorMessage, UhError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { completionOf, eventJson, type OperationJob, type OperationStore } from '../../shared/queue/operation-store.js';
import type { QueueRecord } from '../../shared/queue/queue-record.js';
import { jobIdFor } from '../../shared/queue/topology.js';
import { executeOperation, type ExecuteResult } from '../execute-operation.js';
import { collectArtifacts } from '../results/store-artifacts.js';
import { retryDecision, type RetryRule } from '../results/retry-policy.js';
import { synthesizeReceipt } from '../../operation/synthesize-receipt.js';
import { redisJournal } from './redis-journal.js';
import { claimOperationDir, operationDir, operationsRoot } from '../../operation/operation-files.js';
import type { EventLog } from '../state/event-log.js';
import { eventPublisher } from './event-publisher.js';
import { settleFromRuntime } from './owner-watch.js';
import { defaultReceiptKeySource, loadReceiptKey, signReceipt, type ReceiptKeySource } from '../../operation/receipt-signature.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface PoolContext {
  store: OperationStore;
  stateDir: string;
  cacheDir: string;
  worker: { id: string; host: string; pid: number };
  logger: Logger;
  artifactCapBytes: number;
  sandboxKeepHours: number;
  keepSandbox: boolean;
  sandboxPool?: PoolSettings;
  receiptKey?: ReceiptKeySource;
  prices?: PriceTable;
  /** `UH_ISOLATION` for the runtime and checks. */
  isolation: 'auto' | 'require' | 'off';
  /** `UH_ISOLATION_TMPFS_BYTES`; unset: 1 GiB. */
  isolationTmpfsBytes?: number;
  /** Queues by runtime id, to enqueue a retry attempt. */
  queues: Map<string, Queue>;
  /** The abort controller of every operation this process runs (cancel and shutdown use them). */
  active: Map<string, AbortController>;
  /** Which settled outcomes run again as a new attempt (results/retry-policy.ts). */
  retryPolicy: readonly RetryRule[];
}

export interface JobSummary {
  operation_id: string;
  outcome: 'finished' | 'retry_scheduled' | 'unknown' | 'settled' | 'stale' | 'missing' | 'lost';
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
  if (!claimOperationDir(stateDir, operationId)) throw new UhError('internal', `cannot claim ${operationDir(stateDir, operationId)}`);
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
type Finished = Extract<ExecuteResult, { state: 'finished' }>;
type Artifacts = Record<string, string>;

export async function processOperationJob(ctx: PoolContext, job: Job<OperationJob>, token: string | undefined): Promise<JobSummary> {
  const id = job.data.operation_id;
  const log = ctx.logger.child({ runtime: job.data.runtime, worker: ctx.worker.id });
  const run: JobRun = { ctx, data: job.data, id, owner: `${ctx.worker.id}/${job.id}/${token ?? ''}`, controller: new AbortController(), log };
  const summary = await processClaimed(run, job);
  // One info line per settle (docs/observability.md): the job's outcome as bull-board shows it.
  log.info({ ...summary, attempt: job.data.attempt }, 'settle');
  return summary;
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
    freshDir(ctx.stateDir, id);
    const result = await runPipeline(run, prepared);
    if (result.state === 'unknown') {
      // The runtime could not prove whether its work was dispatched: never re-run, wait for recover.
      await ctx.store.orphaned(id, result.reason, completionOf(record, { state: 'unknown' }), run.owner);
      return { operation_id: id, outcome: 'unknown' };
    }
    const artifacts = collectArtifacts(result.dir, ctx.artifactCapBytes);
    return (await scheduleRetry(run, result, artifacts)) ?? (await settleFinished(run, record, result, artifacts));
  } finally {
    ctx.active.delete(id);
  }
}

/** Claim the record for this worker; a summary when this job must not run. */
async function claimJob(run: JobRun, jobId: string): Promise<JobSummary | null> {
  const { ctx, data, id } = run;
  const claim = await ctx.store.claim(id, run.owner, ctx.worker, jobId, completionOf({ operation_id: id, attempt: data.attempt, runtime: data.runtime }));
  if (claim.kind === 'unknown') {
    ctx.logger.warn({ operation_id: id }, 'job re-delivered after its runtime started: operation is now unknown, not run again');
    // As the owner watch would have: a runtime with its own records settles it from them.
    if ((await settleFromRuntime(ctx, id)) === 'finished') return { operation_id: id, outcome: 'settled' };
  }
  if (claim.kind !== 'run') return { operation_id: id, outcome: claim.kind === 'settled' ? 'settled' : claim.kind };
  if (claim.cancelReason) run.controller.abort({ kind: 'cancel', message: `cancelled: ${claim.cancelReason}` });
  run.log.info({ operation_id: id, attempt: data.attempt, job_id: jobId }, 'claim');
  return null;
}

/** Prepare on this host; a failure (or a cancel that stopped git) settles the record with its receipt. */
async function prepareOrSettle(run: JobRun, record: QueueRecord): Promise<Prepared | JobSummary> {
  const { ctx, id } = run;
  try {
    const { prepareJob } = await import('./prepare-job.js');
    return await prepareJob(run.data, { ...ctx, signal: run.controller.signal });
  } catch (error) {
    const reason = run.controller.signal.aborted ? (run.controller.signal.reason as { message?: string } | undefined) : undefined;
    const outcome: Outcome = reason
      ? { status: 'cancelled', raw: 'cancel', message: reason.message ?? 'cancelled', timed_out: false }
      : {
          status: 'failed',
          raw: UhError.isInstance(error) ? `uh:${error.kind}` : 'internal',
          message: errorMessage(error),
          timed_out: false,
          ...(UhError.isInstance(error) && error.hint ? { hint: error.hint } : {}),
        };
    const key = loadReceiptKey(ctx.receiptKey ?? defaultReceiptKeySource(ctx.cacheDir), true);
    const receipt = key ? signReceipt(synthesizeReceipt(record, outcome), key) : synthesizeReceipt(record, outcome);
    const finished = { state: 'finished', status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code } as const;
    await ctx.store.settle(id, {
      owner: run.owner,
      allowedStates: ['running'],
      record: finished,
      artifacts: { receipt: `${JSON.stringify(receipt, null, 2)}\n` },
      event: eventJson(id, 'operation.completed', { status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code }),
      completion: completionOf(record, finished),
    });
    return { operation_id: id, outcome: 'finished', status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code };
  }
}

/** The shared pipeline with the queue's hooks: events to Redis, owner-checked state writes. */
async function runPipeline(run: JobRun, prepared: Prepared): Promise<ExecuteResult> {
  const { ctx, id, owner, controller } = run;
  const { store } = ctx;
  let eventLog: EventLog | null = null;
  const publisher = eventPublisher(store, id);
  // The last owner-checked patch mirrored to the record: an unchanged one is not written again.
  let mirrored = JSON.stringify({ state: 'running', sandbox_path: null, session_id: null, thread_id: null, turn_id: null });
  const result = await executeOperation({
    prepared,
    stateDir: ctx.stateDir,
    cacheDir: ctx.cacheDir,
    mode: 'queue',
    attempt: run.data.attempt,
    signal: controller.signal,
    logger: run.log,
    sandboxKeepHours: ctx.sandboxKeepHours,
    keepSandbox: ctx.keepSandbox,
    ...(ctx.sandboxPool ? { sandboxPool: ctx.sandboxPool } : {}),
    ...(ctx.receiptKey ? { receiptKey: ctx.receiptKey } : {}),
    ...(ctx.prices ? { prices: ctx.prices } : {}),
    isolation: ctx.isolation,
    ...(ctx.isolationTmpfsBytes ? { isolationTmpfsBytes: ctx.isolationTmpfsBytes } : {}),
    journal: redisJournal(store, id, owner),
    onEventLog: (log) => {
      eventLog = log;
      log.subscribe(publisher.publish);
    },
    beforeRuntime: async () => {
      const gate = await store.markRuntimeStarted(id, owner);
      if (gate === 'cancelled') controller.abort({ kind: 'cancel', message: 'cancelled before the runtime started' });
      if (gate === 'lost') throw new UhError('conflict', `worker ${ctx.worker.id} no longer owns ${id}: the runtime is not started`);
      run.log.info({ operation_id: id }, 'runtime start');
    },
    onState: async (state, rec) => {
      // Settled in one script each: finished with its artifacts, unknown with its event.
      if (state === 'finished' || state === 'unknown') return;
      const patch = { state, sandbox_path: rec.sandbox_path, session_id: rec.session_id ?? null, thread_id: rec.thread_id ?? null, turn_id: rec.turn_id ?? null };
      // The claim wrote `running`; the gate (beforeRuntime) wrote runtime_started: nothing new, no round trip.
      if (JSON.stringify(patch) === mirrored) return;
      mirrored = JSON.stringify(patch);
      await store.updateIfOwner(id, owner, patch);
    },
  });
  await (eventLog as EventLog | null)?.flush();
  await publisher.flush();
  return result;
}

/** A NEW attempt when the retry policy says so (and this worker still owns the record). */
async function scheduleRetry(run: JobRun, result: Finished, artifacts: Artifacts): Promise<JobSummary | null> {
  const { ctx, data, id } = run;
  const { receipt } = result;
  const decision = retryDecision(receipt.outcome, data.attempt, ctx.retryPolicy);
  if (!decision.retry) return null;
  const attempt = data.attempt + 1;
  const jobId = jobIdFor(id, attempt);
  const retryAt = new Date(Date.now() + decision.delayMs);
  if (!(await ctx.store.nextAttempt(id, run.owner, attempt, jobId, artifacts.receipt ?? '', retryAt))) return null;
  await ctx.store.appendEvent(id, eventJson(id, 'operation.queued', { attempt, delay_ms: decision.delayMs, reason: decision.rule }));
  const queue = ctx.queues.get(data.runtime);
  await queue?.add('operation', { ...data, attempt }, { jobId, delay: decision.delayMs });
  return { operation_id: id, outcome: 'retry_scheduled', status: receipt.status };
}

/** Record, artifacts and outbox entry in one owner-checked script. */
async function settleFinished(run: JobRun, record: QueueRecord, result: Finished, artifacts: Artifacts): Promise<JobSummary> {
  const { ctx, id } = run;
  const { receipt } = result;
  const finished = { state: 'finished', status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code } as const;
  const settled = await ctx.store.settle(id, {
    owner: run.owner,
    allowedStates: ['running', 'verifying'],
    record: finished,
    artifacts,
    event: null,
    completion: completionOf(record, finished),
  });
  if (!settled) {
    ctx.logger.warn({ operation_id: id }, 'the record moved on while this worker ran (lost ownership): receipt kept locally only');
    return { operation_id: id, outcome: 'lost', status: receipt.status };
  }
  return { operation_id: id, outcome: 'finished', status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code };
}
