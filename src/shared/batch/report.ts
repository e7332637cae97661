/**
 * The batch report: a pure function of the batch record and each child's receipt (or its
 * state when it has none: queued, running, unknown). Per runtime: pass rate over trials
 * (pass@1, and pass@k with the unbiased estimator of Chen et al. 2021), status and verdict
 * counts with the reasons of blocked and failed runs, median and p90 duration, tokens and
 * cost (null = unknown, never zero), files changed, each check's result with its tail, the
 * final messages. Renderers: batch-report-text.ts (table, md), batch-report-html.ts.
 */
import type { Receipt } from '../contracts/receipt.js';
import { EXIT } from '../contracts/exit-codes.js';
import { costOf, type PriceTable } from '../prices.js';
import { invalidInput } from '../errors.js';
import type { BatchRecord } from './record.js';

export interface ChildInput {
  runtime: string;
  trial: number;
  operation_id: string;
  /** The operation's state when it has no receipt (`unknown`, `queued`, `running`, `missing`). */
  state: string;
  receipt: Receipt | null;
  diff: string | null;
  /** The suite task (absent in a one-mission batch). */
  task?: string;
  /** The operation this one retried after an infrastructure error (absent for a first attempt). */
  retry_of?: string;
  /** A later attempt replaced this one (it was an error, retried): counted as an error, never as a result. */
  superseded?: boolean;
}

export interface TrialRow {
  runtime: string;
  /** The suite task, or null in a one-mission batch. */
  task: string | null;
  trial: number;
  /** The operation this attempt retried, or null. */
  retry_of: string | null;
  /** Replaced by a retry: an error kept for the record, never a result. */
  superseded: boolean;
  /** The hidden verifier's reward (0..1), null without one. */
  reward: number | null;
  operation_id: string;
  /** The receipt's status, or the state of an unsettled child (`unknown` when it cannot be proven). */
  status: string;
  verdict: string;
  exit_code: number | null;
  passed: boolean | null;
  /**
   * Why this trial is an infrastructure *error* rather than the agent's failure (null: it is
   * not): no provable dispatch (`unknown`), a lost worker settled by recover, or `blocked` by
   * the host (spawn, auth, provider, network, isolation). Errors are left out of pass rates,
   * durations, tokens and cost, and counted on their own.
   */
  error: string | null;
  reason: string | null;
  duration_ms: number | null;
  tokens: number | null;
  cost_usd: number | null;
  /** The model the runtime ran (its usage report, else its runtime_config), null when unknown. */
  model: string | null;
  /** The runtime's own version as it reported it, null when unknown. */
  version: string | null;
  changed_files: string[];
  diff_bytes: number;
  checks: Array<{ name: string; passed: boolean; tail: string }>;
  final_message: string;
  diff: string | null;
}

export interface RuntimeRow {
  runtime: string;
  trials: number;
  /** Trials with a verdict of the agent: settled and not errors (the denominator of pass@1). */
  settled: number;
  passed: number;
  /** Infrastructure errors (see TrialRow.error), excluded from `settled`. */
  errors: number;
  pass_at_1: number | null;
  /** 95 % Wilson score interval on pass@1 (null with no settled trial). */
  pass_at_1_interval: { low: number; high: number } | null;
  /** null when fewer than k trials are settled (the estimator needs k ≤ n). */
  pass_at_k: number | null;
  k: number;
  statuses: Record<string, number>;
  verdicts: Record<string, number>;
  reasons: Array<{ status: string; reason: string; count: number }>;
  median_ms: number | null;
  p90_ms: number | null;
  tokens: number | null;
  cost_usd: number | null;
  files_changed: string[];
  /** The models its trials ran (distinct, in order of first use); empty when none was known. */
  models: string[];
  /** The runtime versions its trials reported (distinct); empty when none did. */
  versions: string[];
  /** Mean reward over the settled trials that recorded one (null: none did). */
  mean_reward: number | null;
  /** Errors retried automatically (each retry is a new child operation). */
  retried: number;
  /** Per check: passes over every settled trial; a trial that ran no such check counts in `total` as `not_run`. */
  checks: Array<{ name: string; passed: number; total: number; not_run: number }>;
}

export interface BatchReport {
  schema_version: 'uh.batch-report.v0';
  batch: BatchRecord;
  settled: boolean;
  exit_code: number;
  /** The k of pass@k (`--k`, default the trial count). */
  k: number;
  runtimes: RuntimeRow[];
  /** A suite's task × runtime matrix (empty for a one-mission batch); per runtime its `score` is the mean pass@1 over tasks. */
  matrix: Array<{ task: string; cells: RuntimeRow[] }>;
  /** Per runtime: the mean over tasks of pass@1 (tasks with a settled trial), null with none. */
  scores: Record<string, number | null>;
  trials: TrialRow[];
  generated_at: string;
}

const DIFF_CAP = 256 * 1024;

/** Unbiased pass@k over n trials of which c passed: 1 − C(n−c, k) / C(n, k). */
export function passAtK(n: number, c: number, k: number): number | null {
  if (n === 0 || k < 1 || k > n) return null;
  if (n - c < k) return 1;
  let missAll = 1;
  for (let i = n - c + 1; i <= n; i += 1) missAll *= 1 - k / i;
  return 1 - missAll;
}

/** Rates are shown rounded: 4 decimal places, never `0.33333333333333326`. */
export function rounded(v: number | null): number | null {
  return v === null ? null : Math.round(v * 1e4) / 1e4;
}

/** The 95 % Wilson score interval of c passes in n trials, or null when n = 0. */
export function wilson(n: number, c: number, z = 1.959964): { low: number; high: number } | null {
  if (n === 0) return null;
  const p = c / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / (1 + z2 / n);
  return { low: rounded(Math.max(0, centre - half)) as number, high: rounded(Math.min(1, centre + half)) as number };
}

/** The k of pass@k: `--k` (1 ≤ k ≤ trials), else the trial count. */
export function parseK(flag: unknown, trials: number): number {
  if (flag === undefined) return trials;
  const k = Number(flag);
  if (!Number.isInteger(k) || k < 1 || k > trials)
    throw invalidInput(`--k: "${String(flag)}" must be a whole number from 1 to the trial count (${trials})`);
  return k;
}

/** The q-quantile (nearest rank) of the values, or null when there are none. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? null;
}

function tokensOf(receipt: Receipt): number | null {
  const u = receipt.usage;
  if (u.total_tokens !== undefined) return u.total_tokens;
  if (u.input_tokens === undefined && u.output_tokens === undefined) return null;
  return (u.input_tokens ?? 0) + (u.output_tokens ?? 0);
}

/**
 * The last lines of a check's output, from the receipt's scrubbed `output_tail` (or
 * `output_head` when the head holds all of it): never `log`, a path on the worker's host.
 */
export function checkTail(check: Receipt['checks'][number], lines = 12): string {
  const text = check.output_tail || check.output_head;
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Outcomes of a lost or unprovable run (recover, a dead owner) rather than of the agent. */
const LOST_RAW = new Set(['unknown', 'not_dispatched', 'not_started']);

/**
 * Whether a receipt records an infrastructure error: the run was lost (settled by recover), or
 * `blocked` by the host. The agent's own refusal to cross a hidden path is its failure.
 */
export function errorOf(receipt: Receipt): string | null {
  const { raw } = receipt.outcome;
  if (LOST_RAW.has(raw)) return `lost: ${receipt.outcome.message}`;
  if (receipt.status === 'blocked' && raw !== 'isolation:hidden_path')
    return `blocked (${raw}): ${receipt.outcome.message}`;
  return null;
}

/** Why a run did not pass, from its receipt: the failed checks, the scope violations, or the runtime's outcome. */
export function reasonOf(receipt: Receipt): string | null {
  if (receipt.exit_code === 0 && receipt.status === 'completed') return null;
  if (receipt.status === 'completed' && receipt.verdict === 'verification_failed') {
    const failed = receipt.checks
      .filter((c) => !c.passed)
      .map((c) => `${c.name} (${c.timed_out ? 'timed out' : `exit ${c.exit_code ?? c.signal}`})`);
    return `verification_failed: check ${failed.join(', ')} failed`;
  }
  if (receipt.status === 'completed' && receipt.verdict === 'scope_violation') {
    return `scope_violation: ${receipt.scope.violations.map((v) => `${v.path} (${v.reason})`).join(', ')}`;
  }
  return [receipt.outcome.message, receipt.outcome.hint].filter(Boolean).join(' — ') || receipt.outcome.raw;
}

function attemptFields(child: ChildInput): Pick<TrialRow, 'task' | 'retry_of' | 'superseded'> {
  return { task: child.task ?? null, retry_of: child.retry_of ?? null, superseded: child.superseded === true };
}

export function trialRow(child: ChildInput, prices: PriceTable): TrialRow {
  const { runtime, trial, operation_id, receipt } = child;
  const diff =
    child.diff === null
      ? null
      : child.diff.length > DIFF_CAP
        ? `${child.diff.slice(0, DIFF_CAP)}\n… (diff truncated in the report)\n`
        : child.diff;
  if (!receipt) {
    const status = child.state === 'finished' ? 'unknown' : child.state;
    return {
      ...attemptFields(child),
      reward: null,
      runtime,
      trial,
      operation_id,
      status,
      verdict: '-',
      exit_code: null,
      passed: null,
      error: status === 'unknown' || child.superseded ? 'unknown: no receipt, dispatch cannot be proven' : null,
      reason: status === 'unknown' ? 'no receipt: dispatch cannot be proven (uh mission recover)' : null,
      duration_ms: null,
      tokens: null,
      cost_usd: null,
      model: null,
      version: null,
      changed_files: [],
      diff_bytes: 0,
      checks: [],
      final_message: '',
      diff,
    };
  }
  const reason = reasonOf(receipt);
  return {
    ...attemptFields(child),
    reward: receipt.reward ?? null,
    runtime,
    trial,
    operation_id,
    status: receipt.status,
    verdict: receipt.verdict,
    exit_code: receipt.exit_code,
    passed: receipt.exit_code === 0,
    error: errorOf(receipt),
    reason,
    duration_ms: receipt.timings_ms.total_ms ?? null,
    tokens: tokensOf(receipt),
    cost_usd: costOf(receipt.usage, prices, [
      runtime,
      receipt.runtime.adapter_id,
      ...(receipt.runtime.model ? [receipt.runtime.model] : []),
    ]),
    model: receipt.runtime.model ?? null,
    version: receipt.runtime.version ?? null,
    changed_files: receipt.changed_files.map((f) => f.path),
    diff_bytes: receipt.diff_bytes,
    checks: receipt.checks.map((c) => ({ name: c.name, passed: c.passed, tail: checkTail(c) })),
    final_message: receipt.final_message.trim(),
    diff,
  };
}

function countBy(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/** The known values, each once, in order of first appearance. */
function distinct(values: ReadonlyArray<string | null>): string[] {
  return [...new Set(values.filter((v): v is string => v !== null))];
}

/** The mean of the known values (rounded), null when none is known. */
function meanOf(values: ReadonlyArray<number | null>): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : rounded(known.reduce((a, b) => a + b, 0) / known.length);
}

/** Sum when every value is known; else null (unknown, never zero). */
function knownSum(values: ReadonlyArray<number | null>): number | null {
  if (values.length === 0 || values.some((v) => v === null)) return null;
  return Math.round((values as number[]).reduce((a, b) => a + b, 0) * 1e6) / 1e6;
}

/**
 * One runtime's row. `checkNames`: the checks any trial of the batch ran, so a runtime whose
 * trials ran none still shows them (0/n, n not run) rather than dropping them.
 */
export function runtimeRow(
  runtime: string,
  k: number,
  trials: readonly TrialRow[],
  checkNames: readonly string[] = [...new Set(trials.flatMap((t) => t.checks.map((c) => c.name)))],
): RuntimeRow {
  const settled = trials.filter((t) => t.passed !== null && t.error === null);
  const passed = settled.filter((t) => t.passed).length;
  const durations = settled.map((t) => t.duration_ms).filter((d): d is number => d !== null);
  const reasons = new Map<string, { status: string; reason: string; count: number }>();
  for (const t of trials) {
    if (t.reason === null) continue;
    const key = `${t.status}\u0000${t.reason}`;
    const seen = reasons.get(key) ?? { status: t.status, reason: t.reason, count: 0 };
    seen.count += 1;
    reasons.set(key, seen);
  }
  return {
    runtime,
    trials: trials.length,
    settled: settled.length,
    passed,
    errors: trials.filter((t) => t.error !== null).length,
    pass_at_1: rounded(passAtK(settled.length, passed, 1)),
    pass_at_1_interval: wilson(settled.length, passed),
    pass_at_k: rounded(passAtK(settled.length, passed, k)),
    k,
    statuses: countBy(trials.map((t) => t.status)),
    verdicts: countBy(settled.map((t) => t.verdict)),
    reasons: [...reasons.values()],
    median_ms: quantile(durations, 0.5),
    p90_ms: quantile(durations, 0.9),
    tokens: knownSum(settled.map((t) => t.tokens)),
    cost_usd: knownSum(settled.map((t) => t.cost_usd)),
    files_changed: [...new Set(settled.flatMap((t) => t.changed_files))].sort(),
    models: distinct(trials.map((t) => t.model)),
    versions: distinct(trials.map((t) => t.version)),
    mean_reward: meanOf(settled.map((t) => t.reward)),
    retried: trials.filter((t) => t.superseded).length,
    checks: checkNames.map((name) => {
      const ran = settled.filter((t) => t.checks.some((c) => c.name === name)).length;
      const passes = settled.filter((t) => t.checks.some((c) => c.name === name && c.passed)).length;
      return { name, passed: passes, total: settled.length, not_run: settled.length - ran };
    }),
  };
}

export function buildBatchReport(
  record: BatchRecord,
  children: readonly ChildInput[],
  prices: PriceTable,
  now = new Date(),
  k = record.trials,
): BatchReport {
  const trials = children.map((c) => trialRow(c, prices));
  const current = trials.filter((t) => !t.superseded);
  const settled = current.every((t) => t.passed !== null);
  const checkNames = [...new Set(trials.flatMap((t) => t.checks.map((c) => c.name)))];
  const exit_code = !settled ? EXIT.unknown : current.every((t) => t.passed) ? EXIT.ok : EXIT.failed;
  const matrix = record.tasks.map((task) => ({
    task,
    cells: record.runtimes.map((r) =>
      runtimeRow(
        r,
        k,
        trials.filter((t) => t.runtime === r && t.task === task),
        checkNames,
      ),
    ),
  }));
  const scores = Object.fromEntries(
    record.runtimes.map((r, i) => [r, meanOf(matrix.map((m) => m.cells[i]?.pass_at_1 ?? null))]),
  );
  return {
    schema_version: 'uh.batch-report.v0',
    batch: record,
    settled,
    exit_code,
    k,
    runtimes: record.runtimes.map((r) =>
      runtimeRow(
        r,
        k,
        trials.filter((t) => t.runtime === r),
        checkNames,
      ),
    ),
    matrix,
    scores,
    trials,
    generated_at: now.toISOString(),
  };
}
