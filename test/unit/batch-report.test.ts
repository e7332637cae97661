/** The batch report's arithmetic and cost rules, from receipts as a user would read them. */
import { describe, expect, it } from 'vitest';
import { assertSameBatch, newBatchRecord } from '../../src/shared/batch/record.js';
import { buildBatchReport, passAtK, quantile, type ChildInput } from '../../src/shared/batch/report.js';
import { sideBySide } from '../../src/shared/batch/report-html.js';
import type { Mission } from '../../src/shared/contracts/mission.js';
import type { Receipt } from '../../src/shared/contracts/receipt.js';
import { costOf } from '../../src/shared/prices.js';
import { loadConfig } from '../../src/shared/config.js';

const mission = {
  schema_version: 'uh.mission.v0',
  mission_id: 'm',
  operation_id: 'b-1',
  title: 'T',
  objective: 'o',
  repository: { url: '/r', ref: 'main' },
  runtime: ['a', 'b'],
  runtime_config_overrides: {},
  labels: {},
} as unknown as Mission;

function receipt(patch: Partial<Receipt>): Receipt {
  return {
    status: 'completed',
    verdict: 'verified',
    exit_code: 0,
    outcome: { status: 'completed', raw: 'exit:0', message: 'ok', timed_out: false },
    timings_ms: { total_ms: 1000 },
    usage: {},
    changed_files: [{ path: 'x.txt', status: 'added' }],
    diff_bytes: 10,
    checks: [],
    final_message: 'done',
    runtime: { adapter_id: 'a', runtime_kind: 'command', session_id: null, thread_id: null, turn_id: null },
    ...patch,
  } as Receipt;
}

describe('batch report', () => {
  it('computes pass@k with the unbiased estimator', () => {
    expect(passAtK(3, 0, 1)).toBe(0);
    expect(passAtK(3, 1, 1)).toBeCloseTo(1 / 3);
    expect(passAtK(3, 1, 3)).toBe(1);
    expect(passAtK(5, 2, 2)).toBeCloseTo(1 - 3 / 10); // 1 - C(3,2)/C(5,2)
    expect(passAtK(0, 0, 1)).toBeNull();
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)).toBe(9);
  });

  it('turns usage into cost with the price table; unknown usage or price stays null, never zero', () => {
    const prices = { a: { input_per_mtok: 2, output_per_mtok: 10, cached_input_per_mtok: 1 } };
    expect(
      costOf({ input_tokens: 1_000_000, cached_input_tokens: 500_000, output_tokens: 100_000 }, prices, ['a']),
    ).toBeCloseTo(1 + 0.5 + 1);
    expect(costOf({ input_tokens: 10 }, prices, ['a'])).toBeNull();
    expect(costOf({ input_tokens: 10, output_tokens: 10 }, prices, ['zzz'])).toBeNull();
    expect(costOf({ cost_usd: 0.25 }, {}, ['a'])).toBe(0.25);
    expect(loadConfig({ UH_PRICES: JSON.stringify(prices) }).core.prices).toEqual(prices);
    expect(() => loadConfig({ UH_PRICES: '{"a":{"input_per_mtok":-1}}' })).toThrow(/invalid configuration/);
  });

  it('aggregates trials per runtime: rates, durations, reasons, unknown children', () => {
    const record = newBatchRecord(mission, ['a', 'b'], 3, 'queue');
    const child = (runtime: string, trial: number, r: Receipt | null, state = 'finished'): ChildInput => ({
      runtime,
      trial,
      operation_id: `b-1.${runtime}.t${trial}`,
      state,
      receipt: r,
      diff: null,
    });
    const blocked = receipt({
      runtime: { adapter_id: 'b', runtime_kind: 'command', session_id: null, thread_id: null, turn_id: null },
      status: 'blocked',
      verdict: 'unverified',
      exit_code: 3,
      outcome: { status: 'blocked', raw: 'spawn', message: 'binary not found', hint: 'install it', timed_out: false },
      usage: { input_tokens: 10, output_tokens: 5 },
    });
    const report = buildBatchReport(
      record,
      [
        child('a', 1, receipt({ timings_ms: { total_ms: 100 }, usage: { input_tokens: 1000, output_tokens: 100 } })),
        child('a', 2, receipt({ timings_ms: { total_ms: 300 }, usage: { input_tokens: 1000, output_tokens: 100 } })),
        child(
          'a',
          3,
          receipt({
            timings_ms: { total_ms: 200 },
            exit_code: 1,
            verdict: 'verification_failed',
            checks: [
              {
                name: 'notes',
                argv: ['test'],
                exit_code: 1,
                signal: null,
                duration_ms: 5,
                timed_out: false,
                passed: false,
                output_bytes: 0,
                output_truncated: false,
                output_head: '',
                output_tail: '',
                output_digest: 'x',
                log: 'missing notes',
              },
            ],
            outcome: { status: 'completed', raw: 'exit:0', message: 'command exited 0', timed_out: false },
            usage: { input_tokens: 1000, output_tokens: 100 },
          }),
        ),
        child('b', 1, blocked),
        child('b', 2, blocked),
        child('b', 3, null, 'unknown'),
      ],
      { a: { input_per_mtok: 1, output_per_mtok: 10 } },
    );
    const [a, b] = report.runtimes;
    expect(a).toMatchObject({
      settled: 3,
      passed: 2,
      median_ms: 200,
      p90_ms: 300,
      tokens: 3300,
      k: 3,
      verdicts: { verified: 2, verification_failed: 1 },
    });
    expect(a?.pass_at_1).toBeCloseTo(2 / 3);
    expect(a?.pass_at_k).toBe(1);
    expect(a?.cost_usd).toBeCloseTo(0.006);
    expect(a?.reasons).toEqual([
      { status: 'completed', reason: 'verification_failed: check notes (exit 1) failed', count: 1 },
    ]);
    expect(b).toMatchObject({
      settled: 2,
      passed: 0,
      pass_at_1: 0,
      statuses: { blocked: 2, unknown: 1 },
      cost_usd: null,
    });
    expect(b?.reasons[0]).toEqual({ status: 'blocked', reason: 'binary not found — install it', count: 2 });
    expect(report.settled).toBe(false);
    expect(report.exit_code).toBe(5);
  });

  it('refuses the same batch id with other runtimes or trials, naming what differs', () => {
    const first = newBatchRecord(mission, ['a', 'b'], 3, 'queue');
    expect(() => assertSameBatch(first, newBatchRecord(mission, ['a', 'b'], 3, 'queue'))).not.toThrow();
    expect(() => assertSameBatch(first, newBatchRecord(mission, ['a', 'c'], 3, 'queue'))).toThrow(/other runtimes/);
    expect(() => assertSameBatch(first, newBatchRecord(mission, ['a', 'b'], 2, 'queue'))).toThrow(/other trials/);
    expect(() =>
      assertSameBatch(first, newBatchRecord({ ...mission, objective: 'other' }, ['a', 'b'], 3, 'queue')),
    ).toThrow(/other mission digest/);
  });

  it('lays a unified diff out side by side, escaped', () => {
    const html = sideBySide(
      'diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n same\n-old <b>\n+new &\n',
    );
    expect(html).toContain('f.txt');
    expect(html).toContain('<td class="del">old &#60;b&#62;</td>');
    expect(html).toContain('<td class="add">new &#38;</td>');
  });
});
