/**
 * The pipeline of one operation, shared by the inline executor and the queue workers: a list of
 * phases over one context (`OperationRun`, src/workers/pipeline/operation-run.ts), each phase
 * owning what it writes:
 *
 *   open      mission.json, the event log, state `running`, `operation.started`
 *   sandbox   a worktree at the base commit                      → run.sandbox
 *   runtime   the adapter, events appended as they happen         → run.folded, runtime-result.yaml
 *   diff      diff against the base commit, scope check, `verifying` → run.diff, run.violations
 *             (an overlay sandbox's helper is started before the runtime, closed after the diff)
 *   checks    the mission's checks, when the runtime completed in scope → run.checks
 *   settle    verdict (once), receipt (once), `operation.completed`; or `unknown` when dispatch
 *             cannot be proven (no receipt: `uh mission recover` settles it)
 *   retention keep or remove the sandbox, once, then the last state
 *   egress    (egress mode) uh's proxy runs from open to the end, closed last
 *
 * States written to operation.json: running → verifying → finished (or unknown). Whatever fails,
 * a receipt is written for the terminal state; nothing already written is lost.
 */
import {
  openOperation,
  recordPipelineError,
  type ExecuteOptions,
  type ExecuteResult,
  type OperationRun,
} from './pipeline/operation-run.js';
import type { Sandbox } from './sandbox/worktree.js';
import { runtimePhase, writeRuntimeResult } from './pipeline/runtime-phase.js';
import { sandboxPhase } from './pipeline/sandbox-phases.js';
import { settleFinished, settleUnknown } from './pipeline/settle-phase.js';
import { checksPhase, diffPhase, startTreeHelper } from './pipeline/verify-phases.js';
import type { OverlayHelper } from './verification/overlay-diff.js';
import { closeEgress } from './pipeline/egress-phase.js';

export type { ExecuteOptions, ExecuteResult } from './pipeline/operation-run.js';

export async function executeOperation(options: ExecuteOptions): Promise<ExecuteResult> {
  const run = await openOperation(options);
  try {
    return await pipeline(run);
  } finally {
    await closeEgress(run.egress);
  }
}

async function pipeline(run: OperationRun): Promise<ExecuteResult> {
  let helper: OverlayHelper | null = null;
  try {
    const sandbox = await sandboxPhase(run);
    helper = startTreeHelper(run, sandbox);
    await runtimePhase(run, sandbox);
    if (run.folded.dispatch_unknown) {
      writeRuntimeResult(run);
      return await settleUnknown(run);
    }
    // A host that no longer mounts the overlay (runtime-phase.ts): nothing ran in it, nothing can read it.
    if (run.folded.outcome.raw === 'isolation:overlay') writeRuntimeResult(run);
    else {
      await diffMeanwhile(run, sandbox, helper, () => writeRuntimeResult(run));
      await checksPhase(run, sandbox);
    }
  } catch (error) {
    // A phase that throws ends the run as `failed`; the receipt below is still written.
    recordPipelineError(run, error);
  } finally {
    helper?.close();
  }
  return settleFinished(run);
}

/**
 * The diff phase, and `meanwhile` once the diff's first git process is under way: the main thread
 * would only wait for it (the diff starts its git within microtasks, before setImmediate fires).
 */
async function diffMeanwhile(
  run: OperationRun,
  sandbox: Sandbox,
  helper: OverlayHelper | null,
  meanwhile: () => void,
): Promise<void> {
  const diffing = diffPhase(run, sandbox, helper);
  diffing.catch(() => undefined); // awaited below; a rejection meanwhile is not unhandled
  await new Promise<void>((resolve) => setImmediate(resolve));
  try {
    meanwhile();
  } finally {
    await diffing;
  }
}
