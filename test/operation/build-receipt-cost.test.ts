/**
 * Cost in receipts (issue 14): the price table turns token usage into `usage.cost_usd`; a run whose
 * usage or price is unknown has no cost (absent, never 0); a runtime's own cost wins.
 */
import { describe, expect, it } from 'vitest';
import { buildReceipt, type ReceiptInput } from '../../src/operation/build-receipt.js';
import { parseMission } from '../../src/shared/contracts/load-mission.js';

const mission = parseMission(
  {
    schema_version: 'uh.mission.v0',
    mission_id: 'm1',
    operation_id: 'op-cost',
    title: 'T',
    objective: 'Do it',
    repository: { url: '/tmp/repo', ref: 'main' },
    runtime: 'codex',
    scope: { allowed_change_globs: ['src/**'] },
  },
  '/tmp',
);

function receiptWith(usage: ReceiptInput['usage'], prices?: ReceiptInput['prices']) {
  return buildReceipt({
    mission,
    contractDigest: 'c',
    promptDigest: 'p',
    baseCommit: null,
    runtime: { adapter_id: 'codex', runtime_kind: 'codex', session_id: null, thread_id: null, turn_id: null },
    ...(prices ? { prices } : {}),
    attempt: 1,
    mode: 'inline',
    startedAt: new Date(0),
    finishedAt: new Date(1000),
    timings: {},
    outcome: { status: 'completed', raw: 'exit:0', message: 'done', timed_out: false },
    usage,
    finalMessage: '',
    finalMessageSource: 'none',
    diff: null,
    violations: [],
    checks: [],
    verdict: 'unverified',
    sandbox: { path: null, retained: false },
    secrets: [],
  }).usage;
}

const PRICES = { codex: { input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 } };

describe('cost in receipts', () => {
  it.each([
    [
      'tokens and a price',
      { input_tokens: 1_000_000, cached_input_tokens: 200_000, output_tokens: 100_000 },
      PRICES,
      2.5,
    ],
    ['the runtime reported its own cost', { input_tokens: 10, output_tokens: 10, cost_usd: 0.42 }, PRICES, 0.42],
    ['no price for the runtime', { input_tokens: 10, output_tokens: 10 }, { pi: PRICES.codex }, undefined],
    ['no token counts', {}, PRICES, undefined],
    ['no price table', { input_tokens: 10, output_tokens: 10 }, undefined, undefined],
  ])('%s → cost_usd %s', (_what, usage, prices, cost) => {
    const got = receiptWith(usage, prices);
    expect(got.cost_usd).toBe(cost);
    expect('cost_usd' in got).toBe(cost !== undefined);
  });
});
