/**
 * Two batch reports side by side (`uh batch compare a b`): per runtime present in either, the
 * pass@1 of each with its denominator, the delta (b − a, in percentage points) and whether the
 * two 95 % Wilson intervals overlap (an overlap is no evidence of a change), the errors and
 * the median durations. Pure: a function of the two reports.
 */
import type { BatchReport, RuntimeRow } from './report.js';
import { msText, pct } from './report-text.js';

export interface CompareRow {
  runtime: string;
  a: { pass_at_1: number | null; passed: number; settled: number; errors: number; median_ms: number | null } | null;
  b: { pass_at_1: number | null; passed: number; settled: number; errors: number; median_ms: number | null } | null;
  /** b − a in pass@1 (null when either side has none). */
  delta: number | null;
  /** Whether the Wilson intervals overlap (null when either side has none). */
  overlap: boolean | null;
}

export interface BatchComparison {
  schema_version: 'uh.batch-compare.v0';
  a: string;
  b: string;
  rows: CompareRow[];
}

const side = (r: RuntimeRow | undefined): CompareRow['a'] =>
  r ? { pass_at_1: r.pass_at_1, passed: r.passed, settled: r.settled, errors: r.errors, median_ms: r.median_ms } : null;

export function compareReports(a: BatchReport, b: BatchReport): BatchComparison {
  const names = [...new Set([...a.runtimes, ...b.runtimes].map((r) => r.runtime))];
  const rows = names.map((runtime): CompareRow => {
    const ra = a.runtimes.find((r) => r.runtime === runtime);
    const rb = b.runtimes.find((r) => r.runtime === runtime);
    const pa = ra?.pass_at_1 ?? null;
    const pb = rb?.pass_at_1 ?? null;
    const ia = ra?.pass_at_1_interval ?? null;
    const ib = rb?.pass_at_1_interval ?? null;
    return {
      runtime,
      a: side(ra),
      b: side(rb),
      delta: pa === null || pb === null ? null : Math.round((pb - pa) * 1e4) / 1e4,
      overlap: ia === null || ib === null ? null : ia.low <= ib.high && ib.low <= ia.high,
    };
  });
  return { schema_version: 'uh.batch-compare.v0', a: a.batch.batch_id, b: b.batch.batch_id, rows };
}

const sideText = (s: CompareRow['a']): string =>
  s === null ? 'absent' : `${pct(s.pass_at_1)} (${s.passed}/${s.settled}${s.errors ? `, ${s.errors} errors` : ''})`;

export function renderComparison(c: BatchComparison): string {
  const header = ['runtime', c.a, c.b, 'delta', 'intervals', `p50 ${c.a}`, `p50 ${c.b}`];
  const body = c.rows.map((r) => [
    r.runtime,
    sideText(r.a),
    sideText(r.b),
    r.delta === null ? '-' : `${r.delta > 0 ? '+' : ''}${Math.round(r.delta * 100)} pp`,
    r.overlap === null ? '-' : r.overlap ? 'overlap (no clear change)' : 'disjoint',
    msText(r.a?.median_ms ?? null),
    msText(r.b?.median_ms ?? null),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((x, i) => x.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `batch ${c.a} → ${c.b}: pass@1 per runtime (delta = ${c.b} − ${c.a})\n${[header, ...body].map(line).join('\n')}\n`;
}
