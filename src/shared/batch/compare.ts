/**
 * Two batch reports side by side (`uh batch compare a b`): per runtime present in either (all
 * tasks), and for suites per task × runtime, each side's pass@1 with its denominator and errors,
 * mean reward, median duration and tokens per trial, and the deltas b − a: pass@1 (with whether
 * the two 95 % Wilson intervals overlap: an overlap is no evidence of a change), mean reward,
 * median duration, tokens per trial. Pure: a function of the two reports.
 */
import type { BatchReport, RuntimeRow } from './report.js';
import { msText, pct } from './report-text.js';

export interface CompareSide {
  pass_at_1: number | null;
  passed: number;
  settled: number;
  errors: number;
  mean_reward: number | null;
  median_ms: number | null;
  /** Tokens over the settled trials / their count (null when a trial's tokens are unknown). */
  tokens_per_trial: number | null;
  cost_per_trial_usd: number | null;
}

export interface CompareRow {
  /** The suite task, or null for the runtime over every task (a one-mission batch has only these). */
  task: string | null;
  runtime: string;
  a: CompareSide | null;
  b: CompareSide | null;
  /** b − a in pass@1 (null when either side has none). */
  delta: number | null;
  /** Whether the Wilson intervals overlap (null when either side has none). */
  overlap: boolean | null;
  /** b − a of the mean reward, the median duration (ms) and the tokens per trial (null when either is unknown). */
  reward_delta: number | null;
  median_ms_delta: number | null;
  tokens_delta: number | null;
}

export interface BatchComparison {
  schema_version: 'uh.batch-compare.v0';
  a: string;
  b: string;
  /** Per runtime, over all tasks. */
  rows: CompareRow[];
  /** Per task × runtime (suites; empty when neither batch has tasks). */
  tasks: CompareRow[];
}

const perTrial = (total: number | null, n: number, places: number): number | null =>
  total === null || n === 0 ? null : Math.round((total / n) * 10 ** places) / 10 ** places;

const side = (r: RuntimeRow | undefined): CompareSide | null =>
  r
    ? {
        pass_at_1: r.pass_at_1,
        passed: r.passed,
        settled: r.settled,
        errors: r.errors,
        mean_reward: r.mean_reward,
        median_ms: r.median_ms,
        tokens_per_trial: perTrial(r.tokens, r.settled, 0),
        cost_per_trial_usd: perTrial(r.cost_usd, r.settled, 6),
      }
    : null;

const minus = (a: number | null | undefined, b: number | null | undefined, places = 4): number | null =>
  a === null || a === undefined || b === null || b === undefined
    ? null
    : Math.round((b - a) * 10 ** places) / 10 ** places;

function compareRow(task: string | null, runtime: string, ra?: RuntimeRow, rb?: RuntimeRow): CompareRow {
  const a = side(ra);
  const b = side(rb);
  const ia = ra?.pass_at_1_interval ?? null;
  const ib = rb?.pass_at_1_interval ?? null;
  return {
    task,
    runtime,
    a,
    b,
    delta: minus(a?.pass_at_1, b?.pass_at_1),
    overlap: ia === null || ib === null ? null : ia.low <= ib.high && ib.low <= ia.high,
    reward_delta: minus(a?.mean_reward, b?.mean_reward),
    median_ms_delta: minus(a?.median_ms, b?.median_ms, 0),
    tokens_delta: minus(a?.tokens_per_trial, b?.tokens_per_trial, 0),
  };
}

const cellOf = (report: BatchReport, task: string, runtime: string): RuntimeRow | undefined =>
  report.matrix.find((m) => m.task === task)?.cells.find((c) => c.runtime === runtime);

export function compareReports(a: BatchReport, b: BatchReport): BatchComparison {
  const names = [...new Set([...a.runtimes, ...b.runtimes].map((r) => r.runtime))];
  const rows = names.map((runtime) =>
    compareRow(
      null,
      runtime,
      a.runtimes.find((r) => r.runtime === runtime),
      b.runtimes.find((r) => r.runtime === runtime),
    ),
  );
  const taskIds = [...new Set([...a.matrix, ...b.matrix].map((m) => m.task))];
  const tasks = taskIds.flatMap((task) =>
    names.map((runtime) => compareRow(task, runtime, cellOf(a, task, runtime), cellOf(b, task, runtime))),
  );
  return { schema_version: 'uh.batch-compare.v0', a: a.batch.batch_id, b: b.batch.batch_id, rows, tasks };
}

const sideText = (s: CompareSide | null): string =>
  s === null ? 'absent' : `${pct(s.pass_at_1)} (${s.passed}/${s.settled}${s.errors ? `, ${s.errors} errors` : ''})`;
const signed = (v: number | null, unit: (x: number) => string): string =>
  v === null ? '-' : `${v > 0 ? '+' : ''}${unit(v)}`;
const pair = (a: string, b: string, d: string): string => (a === '-' && b === '-' ? '-' : `${a} → ${b} (${d})`);
const numText = (v: number | null | undefined): string => (v === null || v === undefined ? '-' : String(v));

function cells(r: CompareRow): string[] {
  return [
    r.task ?? 'all tasks',
    r.runtime,
    sideText(r.a),
    sideText(r.b),
    signed(r.delta, (v) => `${Math.round(v * 100)} pp`),
    r.overlap === null ? '-' : r.overlap ? 'overlap (no clear change)' : 'disjoint',
    pair(numText(r.a?.mean_reward), numText(r.b?.mean_reward), signed(r.reward_delta, String)),
    pair(
      msText(r.a?.median_ms ?? null),
      msText(r.b?.median_ms ?? null),
      signed(r.median_ms_delta, (v) => (v < 0 ? `-${msText(-v)}` : msText(v))),
    ),
    pair(numText(r.a?.tokens_per_trial), numText(r.b?.tokens_per_trial), signed(r.tokens_delta, String)),
  ];
}

export function renderComparison(c: BatchComparison): string {
  const header = ['task', 'runtime', c.a, c.b, 'Δ pass@1', 'intervals', 'mean reward', 'p50', 'tokens/trial'];
  const body = [...c.rows, ...c.tasks].map(cells);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)));
  const line = (row: readonly string[]) =>
    row
      .map((x, i) => x.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `batch ${c.a} → ${c.b}: per runtime, then per task × runtime (Δ = ${c.b} − ${c.a})\n${[header, ...body].map(line).join('\n')}\n`;
}
