/** `uh batch submit|status|watch|cancel` and the queued side of `uh batch report`: from any host. */
import { hostSettingsOf, type UhConfig } from '../../../shared/config.js';
import type { BatchReport } from '../../../shared/batch/report.js';
import { EXIT } from '../../../shared/contracts/exit-codes.js';
import { invalidInput } from '../../../shared/errors.js';
import { BatchStore, type StoredBatch } from '../../../shared/queue/batch-store.js';
import { batchView } from '../../queue/batch-view.js';
import type { QueueClient } from '../../queue/queue-client.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';
import { emit, parseFormat, renderReport } from './batch-output.js';
import { planBatch, PLAN_OPTIONS } from './batch-plan.js';

const REDIS = { redis: { type: 'string' } } as const;

const SUBMIT: CommandSpec = {
  usage:
    'uh batch submit <mission.yaml|suite> [--runtimes a,b,c] [--trials N] [--id batch_id] [--wait [--timeout s]] [--format table|md|html|json] [--json] [--redis url] [--state-dir dir]',
  summary:
    'Enqueue a batch as one BullMQ flow: each runtime × trial a child operation run by the runtime pools, the batch the parent, settled by the results worker (uh worker start --results: report, batch.settled). Idempotent on the batch id (operation_id): the same batch attaches; other runtimes, trials or mission under the id are refused (exit 2) and nothing is enqueued.',
  options: {
    ...COMMON_OPTIONS,
    ...REDIS,
    ...PLAN_OPTIONS,
    wait: { type: 'boolean', default: false },
    timeout: { type: 'string' },
    format: { type: 'string' },
  },
  details: [
    '--wait follows the batch until every child is settled (or unknown) and prints the report; exit as uh batch report.',
    'A suite (a directory of tasks, or a uh.suite.v0 file; Harbor task directories import as tasks) is tasks × runtimes × trials in one flow; its batch id is --id, else <suite_id>-<8 hex> of the tasks, runtimes and trials (other tasks or trials: a new batch id).',
  ],
  examples: [
    'uh batch submit mission.yaml --runtimes codex,pi,qwen --trials 3',
    'uh batch submit mission.yaml --trials 5 --wait --format md > report.md',
    'uh batch submit suites/smoke --runtimes codex,pi --trials 3',
  ],
};
const ONE: Record<'status' | 'watch' | 'cancel', CommandSpec> = {
  status: {
    usage: 'uh batch status <batch_id> [--json] [--redis url]',
    summary: 'The state of a queued batch and of each child operation.',
    options: { ...COMMON_OPTIONS, ...REDIS },
    examples: ['uh batch status fix-login-001 --json'],
  },
  watch: {
    usage: 'uh batch watch <batch_id> [--timeout s] [--format table|md|html|json] [--json] [--redis url]',
    summary:
      'Follow a queued batch until every child is settled (or unknown), then print its report; exit as uh batch report (5 on --timeout).',
    options: { ...COMMON_OPTIONS, ...REDIS, timeout: { type: 'string' }, format: { type: 'string' } },
    examples: ['uh batch watch fix-login-001 --timeout 3600'],
  },
  cancel: {
    usage: 'uh batch cancel <batch_id> [--json] [--redis url]',
    summary: 'Cancel every unsettled child operation of a queued batch; the batch then settles with them.',
    options: { ...COMMON_OPTIONS, ...REDIS },
    examples: ['uh batch cancel fix-login-001'],
  },
};

async function withClient<T>(
  config: UhConfig,
  flag: unknown,
  fn: (client: QueueClient, batches: BatchStore) => Promise<T>,
): Promise<T> {
  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, flag));
  try {
    return await fn(client, new BatchStore(client.redis, client.store.keys));
  } finally {
    await client.close();
  }
}

async function liveReport(client: QueueClient, batch: StoredBatch, config: UhConfig): Promise<BatchReport> {
  return (await batchView(client, batch.record.batch_id, config.core.prices)).report;
}

export async function queueBatchReport(
  config: UhConfig,
  flag: unknown,
  batchId: string,
  k?: unknown,
): Promise<BatchReport> {
  return withClient(config, flag, async (client) => (await batchView(client, batchId, config.core.prices, k)).report);
}

function timeoutOf(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const s = Number(value);
  if (!(Number.isFinite(s) && s > 0))
    throw invalidInput(`--timeout: "${String(value)}" is not a positive number of seconds`);
  return s * 1000;
}

/** Poll until no child is queued or running (a condition with a deadline), printing progress. */
async function follow(
  client: QueueClient,
  batches: BatchStore,
  batchId: string,
  config: UhConfig,
  timeoutMs: number | undefined,
  quiet: boolean,
): Promise<BatchReport | null> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
  let last = '';
  let still = Date.now();
  for (;;) {
    const batch = await batches.require(batchId);
    const report = await liveReport(client, batch, config);
    const line = report.trials.map((t) => `${t.operation_id}=${t.status}`).join(',');
    if (!quiet && line !== last) process.stderr.write(`uh: ${batchId}: ${summarize(report)}\n`);
    if (line !== last) still = Date.now();
    last = line;
    const current = report.trials.filter((t) => !t.superseded);
    const idle = current.every((t) => !['queued', 'running', 'verifying', 'missing'].includes(t.status));
    // An unknown child is retried by the results worker (a new child appears) or waits for recover:
    // give the retry a moment before ending with the recover hint.
    const waitingRetry = current.some((t) => t.status === 'unknown') && Date.now() - still < UNKNOWN_GRACE_MS;
    if (batch.state !== 'running' || (idle && !waitingRetry)) return report;
    if (Date.now() > deadline) return null;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** How long `watch` waits, with an unknown child and nothing changing, for the results worker's retry. */
const UNKNOWN_GRACE_MS = 10_000;

function summarize(report: BatchReport): string {
  const counts: Record<string, number> = {};
  for (const t of report.trials) {
    const key = t.superseded ? 'retried' : t.status;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return Object.entries(counts)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ');
}

async function finish(
  client: QueueClient,
  batches: BatchStore,
  batchId: string,
  config: UhConfig,
  values: Record<string, unknown>,
): Promise<number> {
  const report = await follow(
    client,
    batches,
    batchId,
    config,
    timeoutOf(values.timeout),
    Boolean(values.json) || values.format === 'json',
  );
  if (!report) {
    process.stderr.write(
      `uh: batch ${batchId} not settled after ${String(values.timeout)} s (it keeps running)\nhint: uh batch watch ${batchId}\n`,
    );
    return EXIT.unknown;
  }
  const unknown = report.trials.filter((t) => t.status === 'unknown' && !t.superseded);
  if (unknown.length > 0)
    process.stderr.write(
      `uh: ${unknown.length} child operation(s) unknown: ${unknown.map((t) => t.operation_id).join(', ')}\nhint: uh mission recover <operation_id>, then the batch settles\n`,
    );
  emit(renderReport(report, parseFormat(values.format, values.json)), undefined);
  return report.exit_code;
}

export async function batchSubmit(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(SUBMIT, argv);
  if (values.help) return (void process.stdout.write(`${helpText(SUBMIT)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh batch submit needs exactly one mission file', [], SUBMIT.usage);
  parseFormat(values.format, values.json);
  if (values.timeout !== undefined && !values.wait) throw invalidInput('--timeout: only with --wait');
  timeoutOf(values.timeout);
  if (values.oracle) throw invalidInput('--oracle: with uh batch run (inline) only');
  const plan = planBatch(positionals[0] as string, values, config, 'queue');
  const { runtimes, trials } = plan.record;
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  return withClient(config, values.redis, async (client, batches) => {
    const { submitBatch } = await import('../../queue/submit-batch.js');
    const submitted = await submitBatch(client, plan, {
      stateDir,
      cacheDir: config.core.cacheDir,
      host: hostSettingsOf(config),
      tenant: config.core.tenant,
    });
    const id = submitted.record.batch_id;
    const attached = submitted.kind === 'attached';
    if (!values.wait) {
      if (values.json)
        writeJson({
          batch_id: id,
          attached,
          enqueued: submitted.enqueued,
          runtimes,
          trials,
          tasks: submitted.record.tasks,
          operations: submitted.record.operations,
        });
      else
        process.stdout.write(
          `${attached ? 'attached to existing' : 'queued'} batch ${id}: ${plan.record.tasks.length > 0 ? `${plan.record.tasks.length} tasks × ` : ''}${runtimes.length} runtimes × ${trials} trials = ${submitted.record.operations.length} operations\nfollow: uh batch watch ${id}\n`,
        );
      return EXIT.ok;
    }
    if (!values.json) process.stderr.write(`uh: ${attached ? 'attached to' : 'queued'} batch ${id}; waiting…\n`);
    return finish(client, batches, id, config, values);
  });
}

export async function batchStatus(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(ONE.status, argv);
  if (values.help) return (void process.stdout.write(`${helpText(ONE.status)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh batch status needs one batch id', [], ONE.status.usage);
  return withClient(config, values.redis, async (client, batches) => {
    const batch = await batches.require(positionals[0] as string);
    const report = await liveReport(client, batch, config);
    const children = report.trials.map((t) => ({
      operation_id: t.operation_id,
      runtime: t.runtime,
      trial: t.trial,
      status: t.status,
      verdict: t.verdict,
    }));
    if (values.json)
      writeJson({
        batch_id: batch.record.batch_id,
        state: batch.state,
        settled_at: batch.settled_at,
        runtimes: batch.record.runtimes,
        trials: batch.record.trials,
        children,
      });
    else
      process.stdout.write(
        `batch ${batch.record.batch_id}: ${batch.state}${batch.settled_at ? ` at ${batch.settled_at}` : ''} (${summarize(report)})\n${children.map((c) => `  ${c.operation_id}  ${c.status}  ${c.verdict}`).join('\n')}\n`,
      );
    return EXIT.ok;
  });
}

export async function batchWatch(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(ONE.watch, argv);
  if (values.help) return (void process.stdout.write(`${helpText(ONE.watch)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh batch watch needs one batch id', [], ONE.watch.usage);
  parseFormat(values.format, values.json);
  return withClient(config, values.redis, async (client, batches) =>
    finish(client, batches, positionals[0] as string, config, values),
  );
}

export async function batchCancel(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(ONE.cancel, argv);
  if (values.help) return (void process.stdout.write(`${helpText(ONE.cancel)}\n`), EXIT.ok);
  if (positionals.length !== 1) throw invalidInput('uh batch cancel needs one batch id', [], ONE.cancel.usage);
  return withClient(config, values.redis, async (client, batches) => {
    const batch = await batches.require(positionals[0] as string);
    const { cancelOperation } = await import('../../queue/cancel-operation.js');
    const results: Array<{ operation_id: string; result: string }> = [];
    const ids = batch.record.operations.flatMap((o) => [o.operation_id, ...(batch.retries[o.operation_id] ?? [])]);
    for (const id of ids) {
      const record = await client.store.get(id);
      results.push({
        operation_id: id,
        result: record
          ? await cancelOperation(client, record, `batch ${batch.record.batch_id} cancelled`, config.receipts)
          : 'missing',
      });
    }
    if (values.json) writeJson({ batch_id: batch.record.batch_id, children: results });
    else process.stdout.write(results.map((r) => `${r.operation_id}: ${r.result}`).join('\n') + '\n');
    return EXIT.ok;
  });
}
