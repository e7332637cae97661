import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/shared/contracts/status.js';
import { decideVerdict } from '../../src/workers/results/verdict.js';
import type { CheckResult } from '../../src/shared/contracts/receipt.js';

const check = (passed: boolean): CheckResult => ({
  name: 'c',
  argv: ['true'],
  exit_code: passed ? 0 : 1,
  signal: null,
  duration_ms: 1,
  timed_out: false,
  passed,
  output_bytes: 0,
  output_truncated: false,
  output_digest: 'x',
  log: 'l',
  output_head: '',
  output_tail: '',
});

describe('exit codes', () => {
  it.each([
    ['completed', 'verified', 0],
    ['completed', 'unverified', 0],
    ['completed', 'verification_failed', 1],
    ['completed', 'scope_violation', 1],
    ['failed', 'unverified', 1],
    ['failed', 'scope_violation', 1],
    ['blocked', 'unverified', 3],
    ['cancelled', 'unverified', 4],
  ] as const)('%s + %s → %i', (status, verdict, code) => {
    expect(exitCodeFor(status, verdict)).toBe(code);
  });
});

describe('decideVerdict', () => {
  it.each([
    ['scope violation first, even with passing checks', 1, 1, [check(true)], 'scope_violation'],
    ['no checks declared', 0, 0, [], 'unverified'],
    ['checks declared but not run (runtime failed)', 0, 2, [], 'unverified'],
    ['all passed', 0, 2, [check(true), check(true)], 'verified'],
    ['one failed', 0, 2, [check(true), check(false)], 'verification_failed'],
    ['stopped part way (cancel)', 0, 2, [check(true)], 'verification_failed'],
  ] as const)('%s', (_n, scopeViolations, checksDeclared, checks, expected) => {
    expect(decideVerdict({ scopeViolations, checksDeclared, checks: [...checks] })).toBe(expected);
  });
});
