/** `uh batch run|report`: inline batches, and the report of any batch (local state or Redis). */
import { appendFileSync, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { hostSettingsOf, type UhConfig } from '../../../shared/config.js';
import { buildBatchReport, parseK, type BatchReport } from '../../../shared/batch/report.js';
import type { HtmlOptions } from '../../../shared/batch/report-html.js';
import { apiTrialLinks } from '../../../shared/batch/report-links.js';
import { renderMarkdown } from '../../../shared/batch/report-text.js';
import type { Mission } from '../../../shared/contracts/mission.js';
import { EXIT } from '../../../shared/contracts/exit-codes.js';
import { invalidInput } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/logger.js';
import { batchPath, createBatchRecord, readBatchRecord } from '../../batch.js';
import { localChildren, retryInlineErrors } from '../../batch-inline.js';
import { fileTrialLinks } from '../../batch-links.js';
import { COMMON_OPTIONS, helpText, parseCommand, resolveStateDir, type CommandSpec } from '../cli-kit.js';
import { emit, parseFormat, renderReport } from './batch-output.js';
import { planBatch, PLAN_OPTIONS } from './batch-plan.js';

const RUN: CommandSpec = {
  usage:
    'uh batch run <mission.yaml|suite> [--runtimes a,b,c] [--trials N] [--id batch_id] [--oracle] [--k K] [--concurrency N] [--format table|md|html|json] [--json] [--state-dir dir]',
  summary:
    'Run one mission on several runtimes inline, N trials each, and compare them. Each runtime × trial is its own operation (<operation_id>.<runtime>, or <operation_id>.<runtime>.t<k> with --trials > 1); the batch is <operation_id>, created once: running it again attaches, another runtime list, trial count or mission under the id is refused (exit 2). Exit 0 when every run exited 0, else 1.',
  options: {
    ...COMMON_OPTIONS,
    ...PLAN_OPTIONS,
    k: { type: 'string' },
    concurrency: { type: 'string', default: '1' },
    format: { type: 'string' },
  },
  details: [
    'Runtimes come from --runtimes, else from the mission (runtime: [a, b]); runtime_config_overrides are keyed by runtime id.',
    '--k K: pass@k for that k (1 ≤ K ≤ trials, unbiased estimator; default the trial count).',
    "A suite (a directory of tasks or a uh.suite.v0 file; Harbor task directories import as tasks) runs tasks × runtimes × trials; --oracle runs each Harbor task's solution/solve.sh as the agent.",
    'Cost uses the price table $UH_PRICES / $UH_PRICES_FILE (docs/batch.md).',
  ],
  examples: [
    'uh batch run mission.yaml --runtimes codex,pi,hermes-proxy --trials 3',
    'uh batch run mission.yaml --concurrency 3 --json > report.json',
    'uh batch run suites/smoke --oracle',
  ],
};

const REPORT: CommandSpec = {
  usage:
    'uh batch report <batch_id> [--k K] [--format table|md|html|json] [--out file] [--api-url url] [--json] [--redis url] [--state-dir dir]',
  summary:
    'The report of a batch from its receipts: per runtime pass@1 and pass@k, statuses and verdicts with the reasons of blocked and failed runs, median and p90 duration, tokens and cost, files, checks; per trial its final message and diff. Exit 0 when every run exited 0, 1 when one did not, 5 while a child is not settled (unknown, queued or running).',
  options: {
    ...COMMON_OPTIONS,
    format: { type: 'string' },
    out: { type: 'string' },
    redis: { type: 'string' },
    k: { type: 'string' },
    'api-url': { type: 'string' },
  },
  details: [
    'The inline record in --state-dir when it is there (and no --redis); else the queued batch (uh batch submit) in Redis: --redis, else $REDIS_URL, else redis://127.0.0.1:6379, as uh batch submit uses.',
    '--k K: pass@k for that k (1 ≤ K ≤ trials, unbiased estimator; default the trial count). pass@1 carries a 95% Wilson interval.',
    'html is one self-contained file (no network): a sortable table, a chart, side-by-side diffs; per trial links to its events and transcript: the artifact files relative to --out (inline), or the API with --api-url (a queued batch).',
  ],
  examples: [
    'uh batch report fix-login-001',
    'uh batch report fix-login-001 --format html --out report.html',
    'uh batch report fix-login-001 --redis redis://queue:6379 --format md',
  ],
};

/** Where the HTML report's trial links start from: the --out file's folder, else the working directory. */
const reportDir = (out: unknown): string => (typeof out === 'string' ? dirname(resolve(out)) : process.cwd());

export async function batchRun(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(RUN, argv);
  if (values.help) return (void process.stdout.write(`${helpText(RUN)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh batch run needs exactly one mission file', [], RUN.usage);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 16)
    throw invalidInput(`--concurrency: "${values.concurrency}" must be a whole number from 1 to 16`);
  const format = parseFormat(values.format, values.json);
  const plan = planBatch(positionals[0] as string, values, config, 'inline');
  const k = parseK(values.k, plan.record.trials);
  const { children } = plan;
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  // Refuse bad input for every runtime before anything runs or is written.
  const { prepareOperation } = await import('../../../operation/prepare-operation.js');
  const { operationPorts } = await import('../../../workers/operation-ports.js');
  for (const c of children.filter((c) => c.trial === 1))
    await prepareOperation(
      c.mission,
      { stateDir, cacheDir: config.core.cacheDir, host: hostSettingsOf(config) },
      operationPorts(config.core),
    );
  const { record, kind } = createBatchRecord(stateDir, plan.record);
  if (kind === 'attached' && format !== 'json')
    process.stderr.write(`uh: batch ${record.batch_id} exists: attaching (finished runs are not run again)\n`);
  const { runInline } = await import('../../../workers/inline/run-inline.js');
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort({ kind: 'cancel', message: 'cancelled by SIGINT' }));
  const { compileSettings } = await import('../../../operation/settings.js');
  const settings = compileSettings(config, { stateDir, logger: createLogger(config.core.logLevel) });
  void settings.limitBackend; // probed now: UH_LIMIT_BACKEND=cgroup with no cgroup here is exit 2 before anything starts
  const runAll = async (missions: Mission[]) => {
    const queue = [...missions];
    const worker = async () => {
      for (let m = queue.shift(); m !== undefined; m = queue.shift()) {
        if (format !== 'json') process.stderr.write(`uh: ${m.operation_id} on ${String(m.runtime)}…\n`);
        await runInline(m, { settings, signal: controller.signal });
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, queue.length) }, worker));
  };
  await runAll(children.map((c) => c.mission));
  // Infrastructure errors are retried as on the fleet: a new operation per attempt, up to the bound.
  const max = config.queue.batchErrorRetries;
  const retried = await retryInlineErrors(stateDir, record, children, max, (m) => runAll([m]));
  if (retried > 0 && format !== 'json')
    process.stderr.write(`uh: ${retried} infrastructure error(s) retried (UH_BATCH_ERROR_RETRIES=${max})\n`);
  const report = buildBatchReport(record, localChildren(stateDir, record), config.core.prices, new Date(), k);
  process.stdout.write(renderReport(report, format, { links: fileTrialLinks(stateDir, process.cwd()) }));
  // In a GitHub Actions step: the Markdown report (runtimes, task × runtime matrix, trials) as its summary.
  if (config.ci.stepSummary) appendFileSync(config.ci.stepSummary, `${renderMarkdown(report)}\n`);
  return report.exit_code;
}

const COMPARE: CommandSpec = {
  usage: 'uh batch compare <batch_a> <batch_b> [--json] [--redis url] [--state-dir dir]',
  summary:
    'Compare two batches per runtime and, for suites, per task × runtime: pass@1 of each with its denominator and errors, the delta (b − a, percentage points), whether the 95% Wilson intervals overlap, and the deltas of mean reward, median duration and tokens per trial. Each batch is found as uh batch report finds it. --json: uh.batch-compare.v0.',
  options: { ...COMMON_OPTIONS, redis: { type: 'string' } },
  examples: ['uh batch compare fix-login-001 fix-login-002', 'uh batch compare a b --json'],
};

/**
 * A batch's report, found as `uh batch report` finds it: the inline record (`stateDir` then says
 * where its artifacts are), else the queue (`stateDir` null).
 */
async function loadReport(
  config: UhConfig,
  values: Record<string, unknown>,
  batchId: string,
  k?: unknown,
): Promise<{ report: BatchReport; stateDir: string | null }> {
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  // Like uh mission status: the local record when there is one, else the queue `uh batch submit` used.
  if (values.redis === undefined && existsSync(batchPath(stateDir, batchId))) {
    const record = readBatchRecord(stateDir, batchId);
    const chosen = parseK(k, record.trials);
    const children = localChildren(stateDir, record);
    return { report: buildBatchReport(record, children, config.core.prices, new Date(), chosen), stateDir };
  }
  const { queueBatchReport } = await import('./batch-queue.js');
  return { report: await queueBatchReport(config, values.redis, batchId, k), stateDir: null };
}

/** The HTML report's trial links: artifact files (inline), the API (queued, with --api-url), else none and why. */
function htmlLinks(stateDir: string | null, values: Record<string, unknown>): HtmlOptions {
  if (stateDir !== null) return { links: fileTrialLinks(stateDir, reportDir(values.out)) };
  const api = values['api-url'];
  if (typeof api === 'string') {
    if (!/^https?:\/\/[^\s"'<>]+$/.test(api)) throw invalidInput(`--api-url: "${api}" must be an http(s) URL`);
    return { links: apiTrialLinks(api) };
  }
  return { note: "no links to the trials' events: pass --api-url <the uh api URL>" };
}

export async function batchCompare(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(COMPARE, argv);
  if (values.help) return (void process.stdout.write(`${helpText(COMPARE)}\n`), EXIT.ok);
  if (positionals.length !== 2) throw invalidInput('uh batch compare needs two batch ids', [], COMPARE.usage);
  const { compareReports, renderComparison } = await import('../../../shared/batch/compare.js');
  const a = await loadReport(config, values, positionals[0] as string);
  const b = await loadReport(config, values, positionals[1] as string);
  const comparison = compareReports(a.report, b.report);
  process.stdout.write(values.json ? `${JSON.stringify(comparison, null, 2)}\n` : renderComparison(comparison));
  return EXIT.ok;
}

export async function batchReport(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(REPORT, argv);
  if (values.help) return (void process.stdout.write(`${helpText(REPORT)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh batch report needs one batch id', [], REPORT.usage);
  const format = parseFormat(values.format, values.json);
  const batchId = positionals[0] as string;
  const { report, stateDir } = await loadReport(config, values, batchId, values.k);
  emit(renderReport(report, format, format === 'html' ? htmlLinks(stateDir, values) : {}), values.out);
  return report.exit_code;
}
