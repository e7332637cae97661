import type { CheckResult } from '../../shared/contracts/receipt.js';
import type { Verdict } from '../../shared/contracts/status.js';

/**
 * The verdict, in fixed priority: a scope violation first (never verified), then the checks.
 * No checks declared (or none run because the runtime did not complete) is `unverified`. Pure.
 */
export function decideVerdict(input: {
  scopeViolations: number;
  checksDeclared: number;
  checks: readonly CheckResult[];
}): Verdict {
  if (input.scopeViolations > 0) return 'scope_violation';
  if (input.checksDeclared === 0 || input.checks.length === 0) return 'unverified';
  if (input.checks.length < input.checksDeclared) return 'verification_failed';
  return input.checks.every((c) => c.passed) ? 'verified' : 'verification_failed';
}
