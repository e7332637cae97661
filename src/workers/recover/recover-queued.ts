/**
 * `uh mission recover` for a queued operation, from any host. It never runs a runtime again:
 *   running/verifying, owner alive   → nothing to do
 *   running/verifying, owner gone    → runtime never started: queued again; started: UNKNOWN
 *   queued, its job gone or ended    → enqueued again (its runtime never started)
 *   unknown → leftover process groups on this host killed; the runtime's `recover()` asked
 *             (codex-app-server reads the exact turn back); else settled as `--settle`
 *             (failed or cancelled). Ended through finishOperation: signed like every receipt.
 * The inline half (an operation in the local state dir) is recover-inline.ts beside it. Callers:
 * `uh mission recover` and `POST /v1/operations/:id/recover` (the API's recover route).
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { errorMessage } from '../../shared/errors.js';
import { killLeftoverGroups } from '../../shared/process/leftover-groups.js';
import { completionOf, type OperationStore, type QueueRecord } from '../../shared/queue/operation-store.js';
import { JOB_OPTIONS, jobOrder } from '../../shared/queue/topology.js';
import { finishOperation } from '../../operation/finish-operation.js';
import { recoverQueuedRuntime } from '../../operation/recover-runtime.js';
import type { OperationSettings } from '../../operation/settings.js';
import { receiptFromRecovery, synthesizeReceipt } from '../../operation/synthesize-receipt.js';
import { RUNTIME_CATALOG } from '../operation-ports.js';
import { ownerAlive } from '../pools/owner-watch.js';

/** The queue as recover needs it (a producer's QueueClient is one). */
export interface QueueHandle {
  redis: Redis;
  store: OperationStore;
  queue: (runtimeId: string) => Promise<Queue>;
}

export interface QueuedRecovery {
  steps: string[];
  record: QueueRecord;
}

/** What recovery reads of the host's settings: the state dir (runtime records) and the receipt key it signs with. */
export type RecoverySettings = Pick<OperationSettings, 'stateDir' | 'receiptKey'>;

export async function recoverQueued(
  handle: QueueHandle,
  record: QueueRecord,
  settle: 'failed' | 'cancelled',
  settings: RecoverySettings,
): Promise<QueuedRecovery> {
  const steps: string[] = [];
  if (Object.keys(record.journal).length > 0)
    steps.push(`runtime journal (identity facts to inspect): ${JSON.stringify(record.journal)}`);
  let current = await orphanIfOwnerGone(handle, record, steps);
  if (current.state === 'queued') await requeueIfJobGone(handle, current, steps);
  if (current.state === 'unknown') current = await settleUnknown(handle, current, settle, settings, steps);
  else if (current.state === 'finished')
    steps.push(`finished (${current.status}, ${current.verdict}): nothing to recover`);
  return { steps, record: current };
}

async function orphanIfOwnerGone(handle: QueueHandle, record: QueueRecord, steps: string[]): Promise<QueueRecord> {
  if ((record.state !== 'running' && record.state !== 'verifying') || !record.worker) return record;
  const worker = record.worker.id;
  if (await ownerAlive(handle.redis, handle.store, record)) {
    steps.push(`running on worker ${worker} (alive): nothing to recover`);
    return record;
  }
  const to = await handle.store.orphaned(
    record.operation_id,
    `owner worker ${worker} is gone (no heartbeat)`,
    completionOf(record),
    record.owner,
  );
  steps.push(
    `owner worker ${worker} is gone: ${to === 'unknown' ? 'runtime had started → unknown' : 'runtime never started → queued'}`,
  );
  return (await handle.store.get(record.operation_id)) as QueueRecord;
}

async function requeueIfJobGone(handle: QueueHandle, record: QueueRecord, steps: string[]): Promise<void> {
  const queue = await handle.queue(record.runtime);
  const job = await queue.getJob(record.job_id);
  const jobState = job ? await job.getState() : 'missing';
  if (['waiting', 'delayed', 'active', 'prioritized', 'waiting-children'].includes(jobState)) {
    steps.push(`queued, its job is ${jobState}: nothing to recover`);
    return;
  }
  // Failed or completed without settling the record (or gone): the runtime never started.
  if (job) await job.remove().catch(() => undefined);
  await queue.add(
    'operation',
    { ...record.job, attempt: record.attempt },
    {
      ...JOB_OPTIONS,
      jobId: record.job_id,
      ...jobOrder(record.job),
    },
  );
  steps.push(`its job was ${jobState}: enqueued again (its runtime never started)`);
}

async function settleUnknown(
  handle: QueueHandle,
  record: QueueRecord,
  settle: 'failed' | 'cancelled',
  settings: RecoverySettings,
  steps: string[],
): Promise<QueueRecord> {
  const killed = killLeftoverGroups(record.journal);
  if (killed.length > 0)
    steps.push(`killed the runtime's leftover process group(s) on this host: ${killed.join(', ')}`);
  // First ask the runtime (if it can recover) what became of the run: an exact answer beats --settle.
  const fromRuntime = await receiptFromRuntime(record, settings.stateDir, steps);
  const receipt =
    fromRuntime ??
    synthesizeReceipt(record, {
      status: settle,
      raw: 'unknown',
      message: `dispatch could not be proven (${record.unknown_reason ?? 'unknown'}); settled by uh mission recover without running again`,
      hint: `inspect ${record.sandbox_path ?? 'the worker'}${record.worker ? ` on ${record.worker.host}` : ''}; to run again, submit under a new operation_id`,
      timed_out: false,
    });
  const target = { kind: 'queue', store: handle.store, record, owner: null, allowedStates: ['unknown'] } as const;
  const ended = await finishOperation(target, { receipt, keySource: settings.receiptKey, event: { recovered: true } });
  steps.push(
    ended.settled
      ? `unknown → settled as ${receipt.status}${fromRuntime ? ' from the runtime' : ''} with a receipt (not re-run)`
      : 'changed while recovering: run recover again',
  );
  return (await handle.store.get(record.operation_id)) as QueueRecord;
}

/** A runtime with `recover()` (codex-app-server) may name the outcome from its own records; null: settle by --settle. */
async function receiptFromRuntime(record: QueueRecord, stateDir: string, steps: string[]): Promise<Receipt | null> {
  try {
    const got = await recoverQueuedRuntime(record, stateDir, RUNTIME_CATALOG);
    if (!got) return null;
    steps.push(`runtime ${got.runtime}: ${got.recovery.state}: ${got.recovery.reason}`);
    return got.recovery.state === 'settled' && got.recovery.finished
      ? receiptFromRecovery(record, got.recovery.finished)
      : null;
  } catch (error) {
    steps.push(`runtime recovery failed: ${errorMessage(error)}`);
    return null;
  }
}
