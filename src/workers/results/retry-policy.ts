/**
 * Retry policy as data: which settled outcomes may run again, as a NEW attempt of the same
 * operation, and when. A retry is scheduled only after the previous attempt settled (its
 * receipt is kept), so two executions of one operation never overlap. Everything not matched
 * here is final: a human decides (explicit retry = a new operation_id).
 */
import type { Outcome } from '../../shared/contracts/runtime-result.js';

export interface RetryRule {
  name: string;
  matches: (outcome: Outcome) => boolean;
  /** Attempts in total, the first included. */
  maxAttempts: number;
  /** A provider asking for a longer wait than this is left to the operator. */
  maxDelayMs: number;
}

export const RETRY_POLICY: readonly RetryRule[] = [
  // A rate limit that said when to come back (HTTP 429 + Retry-After, a quota reset time):
  // the runtime did no work worth keeping; waiting the given time is what the provider asked for.
  {
    name: 'rate_limit',
    matches: (o) => o.status === 'blocked' && o.retry_after_ms !== undefined,
    maxAttempts: 3,
    maxDelayMs: 15 * 60_000,
  },
  // Blocked without a retry time (auth, missing binary, unknown model, unreachable endpoint):
  // never retried, an operator must act. Failed, cancelled, completed: final.
];

export type RetryDecision = { retry: true; delayMs: number; rule: string } | { retry: false };

/** Pure: the decision for a settled attempt. */
export function retryDecision(
  outcome: Outcome,
  attempt: number,
  policy: readonly RetryRule[] = RETRY_POLICY,
): RetryDecision {
  const rule = policy.find((r) => r.matches(outcome));
  if (!rule || attempt >= rule.maxAttempts) return { retry: false };
  const delayMs = outcome.retry_after_ms ?? 0;
  if (delayMs > rule.maxDelayMs) return { retry: false };
  return { retry: true, delayMs, rule: rule.name };
}

/** The policy with every rule's attempt limit replaced (operator setting UH_RETRY_MAX_ATTEMPTS). */
export function withMaxAttempts(policy: readonly RetryRule[], maxAttempts: number | null): readonly RetryRule[] {
  return maxAttempts === null ? policy : policy.map((rule) => ({ ...rule, maxAttempts }));
}
