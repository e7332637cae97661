import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../src/shared/contracts/runtime-result.js';
import { RETRY_POLICY, retryDecision, withMaxAttempts } from '../../src/workers/results/retry-policy.js';

const outcome = (status: Outcome['status'], extra: Partial<Outcome> = {}): Outcome => ({
  status,
  raw: 'x',
  message: 'm',
  timed_out: false,
  ...extra,
});

describe('retry policy (one row per rule and per "never")', () => {
  it.each<[string, Outcome, number, ReturnType<typeof retryDecision>]>([
    [
      'rate limit with Retry-After, first attempt → retry after the given delay',
      outcome('blocked', { raw: 'http:429', retry_after_ms: 30_000 }),
      1,
      { retry: true, delayMs: 30_000, rule: 'rate_limit' },
    ],
    [
      'rate limit, second attempt → one more',
      outcome('blocked', { retry_after_ms: 0 }),
      2,
      { retry: true, delayMs: 0, rule: 'rate_limit' },
    ],
    ['rate limit, attempts used up → final', outcome('blocked', { retry_after_ms: 1000 }), 3, { retry: false }],
    [
      'rate limit asking for longer than the cap → the operator decides',
      outcome('blocked', { retry_after_ms: 16 * 60_000 }),
      1,
      { retry: false },
    ],
    ['blocked without a retry time (auth, missing binary) → final', outcome('blocked'), 1, { retry: false }],
    ['failed → final', outcome('failed', { retry_after_ms: 1000 }), 1, { retry: false }],
    ['cancelled → final', outcome('cancelled'), 1, { retry: false }],
    ['completed → final', outcome('completed'), 1, { retry: false }],
  ])('%s', (_name, o, attempt, expected) => {
    expect(retryDecision(o, attempt)).toEqual(expected);
  });
});

it('UH_RETRY_MAX_ATTEMPTS overrides the attempt limit of every rule (1 = never)', () => {
  const limited = outcome('blocked', { retry_after_ms: 1000 });
  expect(retryDecision(limited, 1, withMaxAttempts(RETRY_POLICY, 1))).toEqual({ retry: false });
  expect(retryDecision(limited, 4, withMaxAttempts(RETRY_POLICY, 5))).toMatchObject({ retry: true });
  expect(withMaxAttempts(RETRY_POLICY, null)).toBe(RETRY_POLICY);
});
