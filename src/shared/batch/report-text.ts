/** The batch report as a terminal table and as Markdown (GitHub-flavoured tables). Pure. */
import type { BatchReport, RuntimeRow, TrialRow } from './report.js';

export const pct = (v: number | null): string => (v === null ? 'unknown' : `${Math.round(v * 100)}%`);
/** pass@1 with its denominator and 95 % Wilson interval: `67% (2/3, 95% CI 21–94%)`. */
export const passText = (r: RuntimeRow): string =>
  r.pass_at_1_interval === null
    ? `unknown (0/${r.settled})`
    : `${pct(r.pass_at_1)} (${r.passed}/${r.settled}, 95% CI ${Math.round(r.pass_at_1_interval.low * 100)}–${Math.round(r.pass_at_1_interval.high * 100)}%)`;
/** pass@k, or why it has none (fewer than k settled trials). */
export const passKText = (r: RuntimeRow): string =>
  r.pass_at_k === null ? `n/a (k=${r.k}, ${r.settled} settled)` : `${pct(r.pass_at_k)} (k=${r.k})`;
export const msText = (v: number | null): string =>
  v === null ? '-' : v >= 10_000 ? `${(v / 1000).toFixed(0)}s` : v >= 1000 ? `${(v / 1000).toFixed(1)}s` : `${v}ms`;
export const usd = (v: number | null): string => (v === null ? 'unknown' : `$${v.toFixed(v < 0.01 ? 4 : 2)}`);
export const num = (v: number | null): string => (v === null ? 'unknown' : String(v));
export const counts = (c: Record<string, number>): string =>
  Object.entries(c)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ') || '-';
export const checksText = (r: RuntimeRow): string =>
  r.checks.map((c) => `${c.name} ${c.passed}/${c.total}${c.not_run > 0 ? ` (${c.not_run} not run)` : ''}`).join(', ') ||
  '-';
const firstLine = (s: string, max = 80): string => (s.split('\n')[0] ?? '').slice(0, max);

export const RUNTIME_COLUMNS = [
  'runtime',
  'pass@1',
  'pass@k',
  'errors',
  'statuses',
  'verdicts',
  'p50',
  'p90',
  'tokens',
  'cost',
  'files',
  'checks',
  'reward',
  'model',
  'version',
] as const;

/** The mean reward (`-` without a hidden verifier's reward), the models and versions (`unknown` when none was reported). */
export const rewardText = (r: RuntimeRow): string => (r.mean_reward === null ? '-' : String(r.mean_reward));
export const listText = (values: readonly string[]): string => (values.length === 0 ? 'unknown' : values.join(', '));

export function runtimeCells(r: RuntimeRow): string[] {
  return [
    r.runtime,
    passText(r),
    passKText(r),
    String(r.errors),
    counts(r.statuses),
    counts(r.verdicts),
    msText(r.median_ms),
    msText(r.p90_ms),
    num(r.tokens),
    usd(r.cost_usd),
    String(r.files_changed.length),
    checksText(r),
    rewardText(r),
    listText(r.models),
    listText(r.versions),
  ];
}

const TRIAL_COLUMNS = [
  'runtime',
  'status',
  'verdict',
  'files',
  'checks',
  'ms',
  'tokens',
  'cost',
  'trial',
  'final message',
];

function trialCells(t: TrialRow): string[] {
  const passedChecks = t.checks.filter((c) => c.passed).length;
  return [
    t.runtime,
    t.error === null ? t.status : `${t.status} (error${t.superseded ? ', retried' : ''})`,
    t.verdict,
    String(t.changed_files.length),
    t.checks.length === 0 ? '-' : `${passedChecks}/${t.checks.length}`,
    t.duration_ms === null ? '-' : String(t.duration_ms),
    num(t.tokens),
    usd(t.cost_usd),
    String(t.trial),
    firstLine(t.final_message),
  ];
}

function columns(header: readonly string[], body: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ');
  return [line(header), ...body.map(line)].join('\n');
}

function reasonLines(report: BatchReport): string[] {
  return report.runtimes.flatMap((r) => r.reasons.map((x) => `${r.runtime}: ${x.count}× ${x.status}: ${x.reason}`));
}

/** The errors line: how many trials the infrastructure lost, left out of every rate. */
export function errorsText(report: BatchReport): string {
  const n = report.trials.filter((t) => t.error !== null).length;
  const retried = report.trials.filter((t) => t.superseded).length;
  return `${n} infrastructure error${n === 1 ? '' : 's'} (unknown, lost worker, blocked by the host)${retried > 0 ? `, ${retried} retried automatically` : ''}: excluded from pass rates, durations, tokens and cost`;
}

/** A suite's task × runtime matrix: pass@1 with its denominator (and errors, mean reward) per cell. */
export function matrixRows(report: BatchReport): { header: string[]; body: string[][] } {
  const cellText = (c: RuntimeRow) =>
    `${c.pass_at_1 === null ? 'n/a' : `${Math.round(c.pass_at_1 * 100)}%`} (${c.passed}/${c.settled})${c.errors > 0 ? ` ${c.errors} err` : ''}${c.mean_reward === null ? '' : ` r=${c.mean_reward}`}`;
  const score = (r: string) => {
    const v = report.scores[r];
    return v === null || v === undefined ? 'n/a' : `${Math.round(v * 100)}%`;
  };
  return {
    header: ['task', ...report.batch.runtimes],
    body: [
      ...report.matrix.map((m) => [m.task, ...m.cells.map(cellText)]),
      ['score (mean pass@1)', ...report.batch.runtimes.map(score)],
    ],
  };
}

export function renderTable(report: BatchReport): string {
  const { batch } = report;
  const parts = [
    `batch ${batch.batch_id}: ${batch.title} (${batch.runtimes.length} runtimes × ${batch.trials} trials${report.settled ? '' : ', not settled'})`,
    columns(RUNTIME_COLUMNS, report.runtimes.map(runtimeCells)),
    errorsText(report),
    '',
    ...(report.matrix.length > 0 ? [columns(matrixRows(report).header, matrixRows(report).body), ''] : []),
    columns(TRIAL_COLUMNS, report.trials.map(trialCells)),
  ];
  const reasons = reasonLines(report);
  if (reasons.length > 0) parts.push('', 'reasons:', ...reasons.map((l) => `  ${l}`));
  return `${parts.join('\n')}\n`;
}

/** A Markdown table cell: one line, pipes escaped. */
const cell = (s: string): string => s.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
const mdTable = (header: readonly string[], body: string[][]): string =>
  [
    `| ${header.map(cell).join(' | ')} |`,
    `|${header.map(() => ' --- ').join('|')}|`,
    ...body.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');

export function renderMarkdown(report: BatchReport): string {
  const { batch } = report;
  const parts = [
    `# Batch \`${batch.batch_id}\`: ${cell(batch.title)}`,
    '',
    `${batch.runtimes.length} runtimes × ${batch.trials} trials, mission \`${batch.mission_id}\`${report.settled ? '' : ' — **not settled yet**'}. pass@1 over settled trials with a 95% Wilson interval; pass@k uses k = ${report.k} (unbiased estimator); cost \`unknown\` = no usage or no price.`,
    '',
    '## Runtimes',
    '',
    mdTable(RUNTIME_COLUMNS, report.runtimes.map(runtimeCells)),
    '',
    errorsText(report),
    '',
    ...(report.matrix.length > 0
      ? ['## Tasks × runtimes', '', mdTable(matrixRows(report).header, matrixRows(report).body), '']
      : []),
    '## Trials',
    '',
    mdTable(
      ['operation', ...TRIAL_COLUMNS.slice(0, -1), 'final message'],
      report.trials.map((t) => [`\`${t.operation_id}\``, ...trialCells(t)]),
    ),
  ];
  const reasons = reasonLines(report);
  if (reasons.length > 0) parts.push('', '## Blocked and failed runs', '', ...reasons.map((l) => `- ${cell(l)}`));
  return `${parts.join('\n')}\n`;
}
