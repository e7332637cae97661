import { join } from 'node:path';
import type { UhConfig } from '../../../shared/config.js';
import { loadMissionFile, repositoryPolicy } from '../../../shared/contracts/load-mission.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput, UhError } from '../../../shared/errors.js';
import { COMMON_OPTIONS, helpText, parseCommand, queueRedisUrl, resolveStateDir, writeJson, type CommandSpec } from '../cli-kit.js';
import { printReceiptSummary, receiptJson } from '../receipt-view.js';
import { writeGithubOutput } from '../../queue/github-output.js';
import { publicRecord } from '../../../shared/queue/operation-store.js';

export const MISSION_SUBMIT: CommandSpec = {
  usage: 'uh mission submit <mission.yaml|json> [--wait [--timeout s]] [--require-worker] [--json] [--redis url] [--runtime id] [--state-dir dir]',
  summary:
    'Validate a mission and enqueue it on its runtime queue (runtime.<id>) in Redis. Idempotent on operation_id: the same contract attaches to the existing operation (never a second run); another contract under the same id is refused (exit 2) and nothing is enqueued.',
  options: {
    ...COMMON_OPTIONS,
    redis: { type: 'string' },
    runtime: { type: 'string' },
    wait: { type: 'boolean', default: false },
    timeout: { type: 'string' },
    'require-worker': { type: 'boolean', default: false },
  },
  details: [
    'No live worker serving the runtime (no heartbeat names it): a warning on stderr, the mission waits on its queue;',
    'with --require-worker: exit 3 and nothing is enqueued.',
    'Redis: --redis, else $REDIS_URL, else redis://127.0.0.1:6379 (said on stderr). Keys live under $UH_REDIS_PREFIX (default uh).',
    '--wait follows the operation until it settles and exits with its code (0 ok, 1 failed/verification failed/scope,',
    '3 blocked, 4 cancelled, 5 unknown or --timeout reached); artifacts are copied to <state-dir>/collected/<operation>/.',
    'Under GitHub Actions ($GITHUB_OUTPUT set) --wait writes status, verdict, operation_id, receipt_path,',
    'final_message and diff_path as step outputs.',
  ],
  examples: [
    'uh mission submit mission.yaml --redis redis://127.0.0.1:6379',
    'REDIS_URL=redis://queue:6379 uh mission submit mission.yaml --wait --timeout 3600 --json > receipt.json',
  ],
};

export async function missionSubmit(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(MISSION_SUBMIT, argv);
  if (values.help) return void process.stdout.write(`${helpText(MISSION_SUBMIT)}\n`), EXIT.ok;
  if (positionals.length !== 1) throw invalidInput('uh mission submit needs exactly one mission file', [], MISSION_SUBMIT.usage);
  const timeoutS = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutS !== undefined && !(Number.isFinite(timeoutS) && timeoutS > 0)) throw invalidInput(`--timeout: "${values.timeout}" is not a positive number of seconds`);
  if (timeoutS !== undefined && !values.wait) throw invalidInput('--timeout: only with --wait');
  const mission = loadMissionFile(positionals[0] as string, repositoryPolicy(config.core, 'cli'));
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const runtime = values.runtime as string | undefined;

  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, values.redis));
  try {
    await checkServed(client, runtime ?? [mission.runtime].flat()[0] ?? '', values['require-worker'] === true);
    const { submitOperation } = await import('../../submit.js');
    const submitted = await submitOperation(client, mission, { stateDir, cacheDir: config.core.cacheDir, ...(runtime ? { runtime } : {}) });
    const id = mission.operation_id;
    const attached = submitted.kind === 'attached';
    if (!values.wait) {
      if (values.json) writeJson({ operation_id: id, attached, state: submitted.record.state, queue: submitted.queue, job_id: submitted.record.job_id });
      else process.stdout.write(`${attached ? 'attached to existing' : 'queued'} ${id} on ${submitted.queue} (state ${submitted.record.state})\nfollow: uh mission watch ${id}\n`);
      return EXIT.ok;
    }
    if (!values.json) process.stderr.write(`uh: ${attached ? 'attached to' : 'queued'} ${id} on ${submitted.queue}; waiting…\n`);
    const { tailOperation } = await import('../../../shared/queue/event-stream.js');
    const record = await tailOperation(client.store, id, { from: 'start', ...(timeoutS !== undefined ? { timeoutMs: timeoutS * 1000 } : {}) });
    if (record === null || record.state === 'unknown') {
      const now = record ?? (await client.store.get(id));
      const message =
        record === null
          ? `operation ${id} is still ${now?.state ?? 'queued'} after ${timeoutS} s (it keeps running)`
          : `operation ${id} is unknown: ${record.unknown_reason ?? 'dispatch cannot be proven'}`;
      if (values.json) writeJson({ operation_id: id, state: record === null ? 'wait_timed_out' : 'unknown', operation: now ? publicRecord(now) : null });
      else process.stderr.write(`uh: ${message}\nhint: ${record === null ? `uh mission watch ${id}` : `uh mission recover ${id}`}\n`);
      writeOutputs(config.ci.githubOutput, { status: record === null ? 'wait_timed_out' : 'unknown', verdict: '', operation_id: id, receipt_path: '', final_message: '', diff_path: '' });
      return EXIT.unknown;
    }
    const { materialize } = await import('../../queue/materialize.js');
    const got = await materialize(client.store, id, join(stateDir, 'collected', id));
    if (!got.receipt) throw new Error(`operation ${id} settled without a receipt in Redis`);
    writeOutputs(config.ci.githubOutput, {
      status: got.receipt.status,
      verdict: got.receipt.verdict,
      operation_id: id,
      receipt_path: join(got.dir, 'receipt.json'),
      final_message: got.receipt.final_message,
      diff_path: got.files.find((f) => f.endsWith('diff.patch')) ?? '',
    });
    if (values.json) writeJson({ ...receiptJson(got.receipt, got.dir), attached });
    else printReceiptSummary(got.receipt, got.dir, attached);
    return got.receipt.exit_code;
  } finally {
    await client.close();
  }
}

/** Warn (or with --require-worker refuse, exit 3) when no live worker serves the runtime. */
async function checkServed(client: import('../../queue/queue-client.js').QueueClient, runtime: string, required: boolean): Promise<void> {
  const { liveWorkers } = await import('../../../shared/queue/live-workers.js');
  const workers = await liveWorkers(client.redis, client.store.keys);
  if (workers.some((w) => w.runtimes.includes(runtime))) return;
  const message = `no live worker serves runtime ${runtime} (${workers.length} live worker(s))`;
  const hint = `start one: uh worker start --runtime ${runtime}`;
  if (required) throw new UhError('runtime_unavailable', message, { hint });
  process.stderr.write(`uh: warning: ${message}; the mission waits on its queue until one starts\nhint: ${hint}\n`);
}

/** GitHub Actions step outputs, when `$GITHUB_OUTPUT` is set. */
function writeOutputs(path: string | undefined, values: Record<string, string>): void {
  if (path) writeGithubOutput(path, values);
}
