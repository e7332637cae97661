/**
 * Which finished operations may become a branch: a pure table over (status, verdict). Only a
 * completed and `verified` operation promotes; `unverified` only when the promoter says so
 * explicitly; everything else never (a scope violation above all: its diff broke the contract).
 * And never a diff cut at the host's size cap (`diff.truncated`), whatever the verdict.
 */
import type { Receipt } from '../shared/contracts/receipt.js';
import { invalidInput, type UhError } from '../shared/errors.js';

export type PolicyDecision = 'allow' | 'needs_flag' | 'never';

/** By verdict, for a `completed` operation. */
const BY_VERDICT: Record<Receipt['verdict'], { decision: PolicyDecision; why: string }> = {
  verified: { decision: 'allow', why: 'every check passed' },
  unverified: { decision: 'needs_flag', why: 'no checks were declared, nothing vouches for the change' },
  verification_failed: { decision: 'never', why: 'a verification check failed' },
  scope_violation: { decision: 'never', why: 'the change touched files outside the mission scope' },
};

/** By status, before the verdict: anything but `completed` never promotes. */
const BY_STATUS: Record<Receipt['status'], string | null> = {
  completed: null,
  failed: 'the runtime failed',
  blocked: 'the runtime was blocked',
  cancelled: 'the operation was cancelled',
};

export function promotionPolicy(receipt: Pick<Receipt, 'status' | 'verdict'>): {
  decision: PolicyDecision;
  why: string;
} {
  const statusProblem = BY_STATUS[receipt.status];
  if (statusProblem) return { decision: 'never', why: statusProblem };
  return BY_VERDICT[receipt.verdict];
}

/** The refusal to raise, or null when the operation may be promoted. Exit 2: bad input, nothing changed. */
export function policyRefusal(
  receipt: Pick<Receipt, 'operation_id' | 'status' | 'verdict' | 'diff'>,
  allowUnverified: boolean,
): UhError | null {
  const { decision, why } = promotionPolicy(receipt);
  if (decision === 'allow' || (decision === 'needs_flag' && allowUnverified)) return truncatedRefusal(receipt);
  const what = `status ${receipt.status}, verdict ${receipt.verdict}`;
  if (decision === 'needs_flag') {
    return invalidInput(
      `operation ${receipt.operation_id} is ${receipt.verdict} (${what}): ${why}`,
      [],
      'pass --allow-unverified to promote it anyway',
    );
  }
  return invalidInput(
    `operation ${receipt.operation_id} cannot be promoted (${what}): ${why}`,
    [],
    'only verified operations promote; fix the mission and run a new operation',
  );
}

/** Refusal for an operation with no receipt yet (running, queued) or in the unknown state. */
export function notFinishedRefusal(operationId: string, state: string): UhError {
  return invalidInput(
    `operation ${operationId} cannot be promoted (state ${state}): only a finished, verified operation promotes`,
    [],
    state === 'unknown'
      ? `settle it first: uh mission recover ${operationId}`
      : `wait for it: uh mission status ${operationId}`,
  );
}

/**
 * A diff cut at the host's cap (`UH_DIFF_CAP_BYTES`) holds part of the change: applied, it would
 * commit a tree the checks never saw. Never promoted, whatever the verdict.
 */
function truncatedRefusal(receipt: Pick<Receipt, 'operation_id' | 'diff'>): UhError | null {
  const diff = receipt.diff;
  if (!diff?.truncated) return null;
  return invalidInput(
    `operation ${receipt.operation_id} cannot be promoted: its diff was truncated at ${diff.cap_bytes} of ${diff.bytes_total} bytes (UH_DIFF_CAP_BYTES), and a partial patch is never promoted`,
    [],
    'raise UH_DIFF_CAP_BYTES on the workers (or make the change smaller) and run the mission again',
  );
}
