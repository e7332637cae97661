/**
 * How an operation ends. Finished: the verdict (decided once, src/workers/results/verdict.ts),
 * the receipt written once, `operation.completed`. Unknown (dispatch could not be proven): no
 * receipt, `operation.unknown` naming `uh mission recover`. Both then run the retention phase
 * and write the last state; the event log is closed last.
 */
import type { Outcome } from '../../shared/contracts/runtime-result.js';
import type { Verdict } from '../../shared/contracts/status.js';
import { buildReceipt } from '../../operation/build-receipt.js';
import { writeReceiptOnce } from '../../operation/operation-files.js';
import { UhError } from '../../shared/errors.js';
import { defaultReceiptKeySource, loadReceiptKey, signReceipt, type ReceiptKey } from '../../operation/receipt-signature.js';
import { scrubOperationFiles } from '../results/scrub-files.js';
import { decideVerdict } from '../results/verdict.js';
import { retentionPhase } from './sandbox-phases.js';
import { runtimeIdentity } from './runtime-phase.js';
import { setState, type ExecuteResult, type OperationRun } from './operation-run.js';
import { monotonicMs } from '../../shared/clock.js';

/** A sandbox is removed only after a completed run whose changes are verified or unverified (or when asked to keep it). */
function keepSandbox(run: OperationRun, outcome: Outcome, verdict: Verdict): boolean {
  const succeeded = outcome.status === 'completed' && (verdict === 'verified' || verdict === 'unverified');
  return run.options.keepSandbox === true || !succeeded;
}

/** The key every receipt is signed with: the configured one, else `<cacheDir>/receipt-signing.pem` (Ed25519, made on first use). */
function receiptKeyOf(run: OperationRun): ReceiptKey {
  const source = run.options.receiptKey ?? defaultReceiptKeySource(run.options.cacheDir);
  const key = loadReceiptKey(source, true);
  if (!key) throw new UhError('internal', 'no receipt key');
  return key;
}

export async function settleFinished(run: OperationRun): Promise<ExecuteResult> {
  const { prepared, folded, sandbox } = run;
  const { mission } = prepared;
  const outcome = run.failure ?? folded.outcome;
  const verdict = decideVerdict({ scopeViolations: run.violations.length, checksDeclared: mission.verification.length, checks: run.checks });
  const keep = keepSandbox(run, outcome, verdict);
  run.timings.total_ms = Math.round(monotonicMs() - run.t0);
  scrubOperationFiles(run.dir, run.secrets);
  const unsigned = buildReceipt({
    mission,
    contractDigest: prepared.contractDigest,
    promptDigest: prepared.promptDigest,
    baseCommit: prepared.baseCommit,
    runtime: runtimeIdentity(run),
    ...(run.options.prices ? { prices: run.options.prices } : {}),
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
    verdict,
    sandbox: { path: sandbox?.path ?? null, retained: sandbox !== null && keep },
    isolation: run.isolation.status,
    secrets: run.secrets,
  });
  const receipt = signReceipt(unsigned, receiptKeyOf(run));
  const receiptPath = writeReceiptOnce(run.dir, receipt);
  run.events.append('operation.completed', { status: outcome.status, verdict, exit_code: receipt.exit_code, receipt: receiptPath });
  await retentionPhase(run, keep);
  await setState(run, 'finished', { status: outcome.status, verdict, exit_code: receipt.exit_code });
  await run.events.close();
  return { state: 'finished', receipt, receiptPath, dir: run.dir };
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
