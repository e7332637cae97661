/** The batch report's arithmetic and cost rules, from receipts as a user would read them. */
import { describe, expect, it } from 'vitest';
import { assertSameBatch, newBatchRecord } from '../../src/shared/batch/record.js';
import { buildBatchReport, parseK, passAtK, quantile, wilson, type ChildInput } from '../../src/shared/batch/report.js';
import { renderHtml, sideBySide } from '../../src/shared/batch/report-html.js';
import { renderTable } from '../../src/shared/batch/report-text.js';
import { compareReports, renderComparison } from '../../src/shared/batch/compare.js';
import { apiTrialLinks } from '../../src/shared/batch/report-links.js';
import { parseUsageReport } from '../../src/shared/runtime/usage-report.js';
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
                output_head: 'FAIL: add(2,3) expected 5, got 4',
                output_tail: '',
                output_digest: 'x',
                log: '/hostA/state/operations/b-1.a.t3/check-notes.log',
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
    expect(a?.pass_at_1).toBe(0.6667); // rounded, never 0.6666666666666666
    expect(a?.pass_at_1_interval).toEqual({ low: 0.2077, high: 0.9385 });
    expect(a?.pass_at_k).toBe(1);
    // A trial that ran no checks stays in the denominator.
    expect(a?.checks).toEqual([{ name: 'notes', passed: 0, total: 3, not_run: 2 }]);
    // The failing check's output comes from the receipt, never the worker's log path.
    expect(report.trials[2]?.checks[0]?.tail).toBe('FAIL: add(2,3) expected 5, got 4');
    const html = renderHtml(report);
    expect(html).toContain('FAIL: add(2,3) expected 5, got 4');
    expect(html).not.toContain('/hostA/');
    // verification_failed is red, never the green of a passing run.
    expect(html).toMatch(/data-operation="b-1\.a\.t3"[^>]*data-outcome="failed"/);
    expect(html).toMatch(/<span class="o-failed">completed \/ verification_failed<\/span>/);
    expect(renderTable(report)).toMatch(/a\s+67% \(2\/3, 95% CI 21–94%\)\s+100% \(k=3\)/);
    expect(renderTable(report)).toContain('notes 0/3 (2 not run)');
    expect(a?.cost_usd).toBeCloseTo(0.006);
    expect(a?.reasons).toEqual([
      { status: 'completed', reason: 'verification_failed: check notes (exit 1) failed', count: 1 },
    ]);
    // The host could not spawn the agent (blocked) or lost the run (unknown): errors, not the agent's failures.
    expect(b).toMatchObject({
      settled: 0,
      passed: 0,
      errors: 3,
      pass_at_1: null,
      pass_at_1_interval: null,
      statuses: { blocked: 2, unknown: 1 },
      cost_usd: null,
      median_ms: null,
    });
    expect(a?.errors).toBe(0);
    expect(renderTable(report)).toContain('3 infrastructure errors');
    expect(html).toMatch(/id="errors" data-errors="3"/);
    expect(b?.reasons[0]).toEqual({ status: 'blocked', reason: 'binary not found — install it', count: 2 });
    expect(report.settled).toBe(false);
    expect(report.exit_code).toBe(5);
  });

  it('pass@k for a chosen k ≤ trials; Wilson intervals', () => {
    expect(parseK(undefined, 3)).toBe(3);
    expect(parseK('1', 3)).toBe(1);
    expect(() => parseK('4', 3)).toThrow(/--k: "4" must be a whole number from 1 to the trial count \(3\)/);
    expect(() => parseK('0', 3)).toThrow(/--k/);
    expect(wilson(0, 0)).toBeNull();
    expect(wilson(10, 10)?.high).toBe(1);
    expect(wilson(10, 0)?.low).toBe(0);
    const record = newBatchRecord(mission, ['a', 'b'], 3, 'queue');
    const children: ChildInput[] = [1, 2, 3].flatMap((t) =>
      ['a', 'b'].map((runtime) => ({
        runtime,
        trial: t,
        operation_id: `b-1.${runtime}.t${t}`,
        state: 'finished',
        receipt: receipt(t === 1 ? {} : { exit_code: 1, status: 'failed', verdict: 'unverified' }),
        diff: null,
      })),
    );
    // A 1-in-3 agent: pass@3 = 1, pass@1 = 1/3, pass@2 = 1 − C(2,2)/C(3,2) = 2/3.
    const k3 = buildBatchReport(record, children, {});
    expect(k3.runtimes[0]).toMatchObject({ pass_at_1: 0.3333, pass_at_k: 1, k: 3 });
    const k2 = buildBatchReport(record, children, {}, new Date(), 2);
    expect(k2).toMatchObject({ k: 2 });
    expect(k2.runtimes[0]).toMatchObject({ pass_at_k: 0.6667, k: 2 });
    expect(renderTable(k2)).toMatch(/a\s+33% \(1\/3, 95% CI 6–79%\)\s+67% \(k=2\)/);
  });

  it('a lost run (settled by recover) is an error, left out of rates and durations; an agent refused at a hidden path failed', () => {
    const record = newBatchRecord(mission, ['a', 'b'], 3, 'queue');
    const lost = receipt({
      status: 'failed',
      verdict: 'unverified',
      exit_code: 1,
      timings_ms: { total_ms: 600_000 },
      outcome: { status: 'failed', raw: 'unknown', message: 'dispatch could not be proven', timed_out: false },
    });
    const hidden = receipt({
      status: 'blocked',
      verdict: 'unverified',
      exit_code: 3,
      outcome: { status: 'blocked', raw: 'isolation:hidden_path', message: 'tests/ is hidden', timed_out: false },
    });
    const rows: Array<[string, number, Receipt]> = [
      ['a', 1, receipt({ timings_ms: { total_ms: 100 } })],
      ['a', 2, lost],
      ['a', 3, receipt({ exit_code: 1, status: 'failed', verdict: 'unverified', timings_ms: { total_ms: 300 } })],
      ['b', 1, hidden],
      ['b', 2, hidden],
      ['b', 3, receipt({})],
    ];
    const report = buildBatchReport(
      record,
      rows.map(([runtime, trial, r]) => ({
        runtime,
        trial,
        operation_id: `b-1.${runtime}.t${trial}`,
        state: 'finished',
        receipt: r,
        diff: null,
      })),
      {},
    );
    expect(report.runtimes[0]).toMatchObject({ settled: 2, passed: 1, errors: 1, pass_at_1: 0.5, p90_ms: 300 });
    expect(report.runtimes[1]).toMatchObject({ settled: 3, passed: 1, errors: 0 });
    expect(report.trials[1]?.error).toBe('lost: dispatch could not be proven');
    expect(renderHtml(report)).toMatch(/data-operation="b-1\.a\.t2"[^>]*data-outcome="error"/);
  });

  it('compares two batches per runtime: pass@1 deltas and whether the intervals overlap', () => {
    const batchOf = (id: string, passes: Record<string, number>) => {
      const record = newBatchRecord({ ...mission, operation_id: id }, ['a', 'b'], 10, 'queue');
      const children = record.operations.map((o) => ({
        ...o,
        state: 'finished',
        receipt: receipt(o.trial <= (passes[o.runtime] ?? 0) ? {} : { exit_code: 1, status: 'failed' }),
        diff: null,
      }));
      return buildBatchReport(record, children, {});
    };
    const c = compareReports(batchOf('old', { a: 1, b: 5 }), batchOf('new', { a: 10, b: 6 }));
    expect(c.rows).toEqual([
      expect.objectContaining({ runtime: 'a', delta: 0.9, overlap: false }),
      expect.objectContaining({ runtime: 'b', delta: 0.1, overlap: true }),
    ]);
    const text = renderComparison(c);
    expect(text).toMatch(/a\s+10% \(1\/10\)\s+100% \(10\/10\)\s+\+90 pp\s+disjoint/);
    expect(text).toMatch(/b\s+50% \(5\/10\)\s+60% \(6\/10\)\s+\+10 pp\s+overlap \(no clear change\)/);
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

describe('batch report: usage, rewards and links', () => {
  it('shows the mean reward, model and version per runtime, and links each trial to the API on the fleet', () => {
    const record = newBatchRecord(mission, ['a', 'b'], 2, 'queue');
    const children = record.operations.map((o) => ({
      ...o,
      state: 'finished',
      receipt: receipt({
        reward: o.trial === 1 ? 1 : 0.5,
        usage: { input_tokens: 100, output_tokens: 20 },
        runtime: {
          adapter_id: o.runtime,
          runtime_kind: 'command',
          session_id: null,
          thread_id: null,
          turn_id: null,
          model: 'm-1',
          version: '2.0',
        },
      }),
      diff: null,
    }));
    const prices = { 'm-1': { input_per_mtok: 1, output_per_mtok: 10 } };
    const report = buildBatchReport(record, children, prices);
    expect(report.runtimes[0]).toMatchObject({
      mean_reward: 0.75,
      tokens: 240,
      cost_usd: 0.0006,
      models: ['m-1'],
      versions: ['2.0'],
    });
    const html = renderHtml(report, { links: apiTrialLinks('https://uh.example/') });
    expect(html).toMatch(
      /<td class="n reward" data-v="0.75">0.75<\/td><td class="model">m-1<\/td><td class="version">2.0<\/td>/,
    );
    expect(html).toContain('<a class="link-events" href="https://uh.example/v1/operations/b-1.a.t1/events">events</a>');
    expect(html).toContain('<a class="link-transcript" href="https://uh.example/#/op/b-1.a.t1">transcript</a>');
    expect(renderTable(report)).toMatch(/a\s.*\s240\s+\$0\.0006\s.*0\.75\s+m-1\s+2\.0/);
  });

  it.each([
    [
      '{"input_tokens": 5, "output_tokens": 2, "model": "gpt-5-mini", "extra": true}',
      { usage: { input_tokens: 5, output_tokens: 2 }, model: 'gpt-5-mini' },
    ],
    ['{"input_tokens": -1}', 'invalid input_tokens'],
    ['{"input_tokens": 1.5}', 'invalid input_tokens'],
    ['{"model": "rm -rf /"}', 'invalid model'],
    ['[1, 2]', 'invalid (the report)'],
    ['{}', 'no usage field'],
    ['not json', 'not JSON'],
    [`{"model": "${'x'.repeat(5000)}"}`, 'over 4096 bytes'],
  ])('a usage report %s reads as %o', (text, expected) => {
    const read = parseUsageReport(text, 'block');
    if (typeof expected === 'string') expect(read).toEqual({ problem: `block: ${expected}` });
    else expect(read).toEqual({ report: { version: null, ...expected } });
  });
});
