/**
 * How an operation ends. Finished: the verdict (decided once, src/workers/results/verdict.ts),
 * the receipt built once, the retention phase, then the end: inline, `finishOperation` in the
 * operation's files; queued, the pool's hook (a retry decided first, then `finishOperation` in
 * Redis with the local copy). Unknown (dispatch could not be proven): no receipt,
 * `operation.unknown` naming `uh mission recover`, the sandbox kept. The event log closes last.
 */
import { egressSummary } from './egress-phase.js';
import type { Outcome } from '../../shared/contracts/runtime-result.js';
import type { Verdict } from '../../shared/contracts/status.js';
import { buildReceipt } from '../../operation/build-receipt.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { finishOperation, type FilesTarget } from '../../operation/finish-operation.js';
import { scrubOperationFiles } from '../results/scrub-files.js';
import { decideVerdict } from '../results/verdict.js';
import { retentionPhase } from './sandbox-phases.js';
import { limitsReceipt } from './limits-phase.js';
import { runtimeIdentity } from './runtime-phase.js';
import { setState, type ExecuteResult, type OperationRun } from './operation-run.js';
import { monotonicMs } from '../../shared/clock.js';

/** A sandbox is removed only after a completed run whose changes are verified or unverified (or when asked to keep it). */
function keepSandbox(run: OperationRun, outcome: Outcome, verdict: Verdict): boolean {
  // A tree over its worktree bounds is removed, not kept: keeping it would keep what the bound refused.
  const hit = run.limits.hit?.limit;
  if ((hit === 'worktree_bytes' || hit === 'worktree_files') && !run.settings.sandbox.keepAll) return false;
  const succeeded = outcome.status === 'completed' && (verdict === 'verified' || verdict === 'unverified');
  return run.settings.sandbox.keepAll || !succeeded;
}

/** The receipt's facts as the pipeline gathered them (built by the one builder, signed when the operation ends). */
function receiptOf(run: OperationRun, outcome: Outcome, verdict: Verdict, keep: boolean): Receipt {
  const { prepared, folded, sandbox, settings } = run;
  return buildReceipt({
    mission: prepared.mission,
    contractDigest: prepared.contractDigest,
    promptDigest: prepared.promptDigest,
    baseCommit: prepared.baseCommit,
    runtime: runtimeIdentity(run),
    prices: settings.prices,
    attempt: run.record.attempt,
    mode: run.options.mode,
    startedAt: run.startedAt,
    finishedAt: run.now(),
    timings: run.timings,
    outcome,
    usage: folded.usage,
    finalMessage: folded.final_message,
    finalMessageSource: folded.final_message_source,
    diff: run.diff,
    violations: run.violations,
    checks: run.checks,
    ...(prepared.hiddenVerifier ? { reward: run.reward } : {}),
    verdict,
    sandbox: {
      path: sandbox?.path ?? null,
      retained: sandbox !== null && keep,
      ...(sandbox ? { backend: sandbox.backend ?? 'git-worktree' } : {}),
    },
    isolation: run.egress ? { ...run.isolation.status, egress: egressSummary(run.egress) } : run.isolation.status,
    limits: limitsReceipt(run.limits),
    secrets: run.secrets,
  });
}

/** This host's files of the operation: where it ends inline, and its local copy in queue mode. */
export function localTarget(run: OperationRun, publish: boolean): FilesTarget {
  const { events } = run;
  return {
    kind: 'files',
    stateDir: run.settings.stateDir,
    dir: run.dir,
    record: run.record,
    events: { append: (type, data) => (publish ? events.append(type, data) : events.appendLocal(type, data)) },
  };
}

export async function settleFinished(run: OperationRun): Promise<ExecuteResult> {
  const { mission } = run.prepared;
  const outcome = run.failure ?? run.folded.outcome;
  const verdict = decideVerdict({
    scopeViolations: run.violations.length,
    checksDeclared: mission.verification.length + (run.prepared.hiddenVerifier ? 1 : 0),
    checks: run.checks,
  });
  const keep = keepSandbox(run, outcome, verdict);
  run.timings.total_ms = Math.round(monotonicMs() - run.t0);
  scrubOperationFiles(run.dir, run.secrets);
  const receipt = receiptOf(run, outcome, verdict, keep);
  await retentionPhase(run, keep);
  const end = run.options.hooks?.end;
  const result = end
    ? await end(receipt, localTarget(run, false))
    : await finishOperation(localTarget(run, true), { receipt, keySource: run.settings.receiptKey }).then(
        (ended): ExecuteResult => ({
          state: 'finished',
          receipt: ended.receipt,
          receiptPath: ended.receiptPath,
          dir: run.dir,
          settled: true,
        }),
      );
  await run.events.close();
  return result;
}

export async function settleUnknown(run: OperationRun): Promise<ExecuteResult> {
  const { outcome, session_id, thread_id, turn_id } = run.folded;
  const hint = outcome.hint ?? `uh mission recover ${run.prepared.mission.operation_id}`;
  scrubOperationFiles(run.dir, run.secrets);
  run.events.append('operation.unknown', { reason: outcome.message, hint, raw: outcome.raw });
  await retentionPhase(run, true);
  await setState(run, 'unknown', { session_id, thread_id, turn_id });
  await run.events.close();
  return { state: 'unknown', reason: outcome.message, hint, dir: run.dir };
}
