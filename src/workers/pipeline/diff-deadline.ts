/**
 * The diff phase inside the mission's `timeout_seconds`. The deadline starts with the runtime
 * (`run.deadlineMs`, set by the runtime phase) and covers the runtime and the diff: the diff's git
 * processes are aborted when it passes, and a runtime that completed then ends `failed`
 * (`raw: timeout`, `timed_out`) with the reason, never `verified` on a diff nobody finished. The
 * checks keep their own bounds (each check's `timeout_seconds`), as before.
 *
 * A runtime that did not complete already has its outcome (a timeout among them): its diff only
 * records what it left, so it gets what is left of the deadline but at least DIFF_GRACE_MS, and
 * when even that runs out the receipt keeps the runtime's outcome, without a diff. Every mission
 * thus ends within `timeout_seconds` plus the grace, however large the change.
 */
import type { Outcome } from '../../shared/contracts/runtime-result.js';
import { monotonicMs } from '../../shared/clock.js';

/** The least a diff after a runtime that did not complete gets, deadline passed or not. */
export const DIFF_GRACE_MS = 10_000;

export interface DiffBound {
  /** Aborts the diff's git processes at the bound, or on the operation's cancel. */
  signal: AbortSignal;
  /** The bound passed (not a cancel). */
  expired: () => boolean;
  /** What the bound allowed, in ms (null: no deadline, the runtime never started). */
  allowedMs: number | null;
  dispose: () => void;
}

/** The diff's bound, from the deadline, the runtime's outcome and the caller's cancel signal. */
export function diffBound(deadlineMs: number | null, runtimeCompleted: boolean, cancel?: AbortSignal): DiffBound {
  const controller = new AbortController();
  const signal = cancel ? AbortSignal.any([controller.signal, cancel]) : controller.signal;
  if (deadlineMs === null) return { signal, expired: () => false, allowedMs: null, dispose: () => undefined };
  const left = Math.max(0, deadlineMs - monotonicMs());
  const allowedMs = runtimeCompleted ? left : Math.max(left, DIFF_GRACE_MS);
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort({ kind: 'timeout', message: 'the diff passed the mission deadline' });
  }, allowedMs);
  return { signal, expired: () => expired, allowedMs, dispose: () => clearTimeout(timer) };
}

/** The outcome of a completed runtime whose diff did not finish by the deadline. */
export function diffTimeoutOutcome(timeoutSeconds: number, allowedMs: number): Outcome {
  return {
    status: 'failed',
    raw: 'timeout',
    message: `mission timed out after ${timeoutSeconds} s: the diff of the sandbox did not finish in the ${(allowedMs / 1000).toFixed(1)} s the runtime left (timeout_seconds covers the runtime and the diff)`,
    hint: 'a change this large needs a larger timeout_seconds, or the agent wrote more than it should: look at the sandbox',
    timed_out: true,
  };
}
