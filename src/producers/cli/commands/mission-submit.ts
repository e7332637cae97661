import { join } from 'node:path';
import { hostSettingsOf, type UhConfig } from '../../../shared/config.js';
import type { Mission } from '../../../shared/contracts/mission.js';
import { loadMissionFile, repositoryPolicy } from '../../../shared/contracts/load-mission.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput, UhError } from '../../../shared/errors.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';
import { publicRecord } from '../../../shared/queue/operation-store.js';
import type { QueueClient } from '../../queue/queue-client.js';
import { ensureStateDir } from '../../../operation/operation-files.js';
import { reportRefused, reportUnsettled, resetJunit } from '../../ci/ci-report.js';
import { OVERRIDE_DETAILS, OVERRIDE_OPTIONS, overridesOf } from '../mission-overrides-flags.js';
import { reportCollected } from '../submit-over-api.js';

export const MISSION_SUBMIT: CommandSpec = {
  usage:
    'uh mission submit <mission.yaml|json>... [--wait [--timeout s] [--junit path] [--detach-on-abort]] [--require-worker] [--json] [--redis url | --api url [--token t]] [--runtime id] [--operation-id id|template] [--ref ref] [--repository url] [--state-dir dir]',
  summary:
    'Validate a mission and enqueue it on its runtime queue (runtime.<id>) in Redis. Idempotent on operation_id: the same contract attaches to the existing operation (never a second run); another contract under the same id is refused (exit 2) and nothing is enqueued.',
  options: {
    ...COMMON_OPTIONS,
    ...OVERRIDE_OPTIONS,
    redis: { type: 'string' },
    api: { type: 'string' },
    token: { type: 'string' },
    runtime: { type: 'string' },
    wait: { type: 'boolean', default: false },
    timeout: { type: 'string' },
    junit: { type: 'string' },
    'detach-on-abort': { type: 'boolean', default: false },
    'require-worker': { type: 'boolean', default: false },
  },
  details: [
    'Several files: all are validated and their refs resolved before anything is enqueued (a bad one: exit 2, nothing',
    'enqueued), then they go to Redis in a few pipelined round trips; --json prints an array. --wait takes one file.',
    'No live worker serving the runtime (no heartbeat names it): a warning on stderr, the mission waits on its queue;',
    'with --require-worker: exit 3 and nothing is enqueued.',
    'Redis: --redis, else $REDIS_URL, else redis://127.0.0.1:6379 (said on stderr). Keys live under $UH_REDIS_PREFIX (default uh).',
    '--wait follows the operation until it settles and exits with its code (0 ok, 1 failed/verification failed/scope,',
    '3 blocked, 4 cancelled, 5 unknown or --timeout reached, 6 the receipt is unsigned, edited or signed by a key not in',
    "this host's keyring: UH_RECEIPT_PUBLIC_KEYS); artifacts are copied to <state-dir>/collected/<operation>/.",
    'Under GitHub Actions ($GITHUB_OUTPUT set) --wait writes status, verdict, operation_id, receipt_path,',
    'final_message and diff_path as step outputs; with $GITHUB_STEP_SUMMARY a Markdown summary; with GITHUB_ACTIONS=true',
    '::error annotations. --junit writes one test case per check plus one for the scope check (docs/ci.md).',
    'SIGINT/SIGTERM while waiting (a cancelled CI job) cancels the operation, prints its id and exits 4;',
    '--detach-on-abort leaves it running instead (follow it with uh mission watch).',
    '--api <url>: through `uh api start` instead of Redis (submit, wait on its SSE stream, collect the receipt, diff and',
    'final message); the bearer token from --token or $UH_API_TOKEN (prefer the variable: argv is visible to ps).',
    ...OVERRIDE_DETAILS,
  ],
  examples: [
    'uh mission submit mission.yaml --redis redis://127.0.0.1:6379',
    'REDIS_URL=redis://queue:6379 uh mission submit mission.yaml --wait --timeout 3600 --json > receipt.json',
    'UH_API_TOKEN=… uh mission submit mission.yaml --api https://uh.example.org --wait --ref "$GITHUB_SHA"',
  ],
};

/** --token, else $UH_API_TOKEN, else (an API on loopback) the token `uh api start --insecure-loopback` wrote. */
async function apiToken(flag: string | undefined, apiUrl: string, config: UhConfig): Promise<string | undefined> {
  const token = flag ?? config.api.token;
  if (token !== undefined) return token;
  const { LOOPBACK_HOSTS, readLoopbackToken } = await import('../../http/api-config.js');
  const host = URL.canParse(apiUrl) ? new URL(apiUrl).hostname : '';
  return LOOPBACK_HOSTS.has(host) ? readLoopbackToken(config.core.cacheDir) : undefined;
}

export async function missionSubmit(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(MISSION_SUBMIT, argv);
  if (values.help) return (void process.stdout.write(`${helpText(MISSION_SUBMIT)}\n`), EXIT.ok);
  if (positionals.length === 0) throw invalidInput('uh mission submit needs a mission file', [], MISSION_SUBMIT.usage);
  if (positionals.length > 1 && values.wait)
    throw invalidInput(
      '--wait: only with one mission file',
      [],
      'submit them, then follow each with: uh mission watch <operation_id>',
    );
  const timeoutS = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutS !== undefined && !(Number.isFinite(timeoutS) && timeoutS > 0))
    throw invalidInput(`--timeout: "${values.timeout}" is not a positive number of seconds`);
  for (const flag of ['timeout', 'junit', 'detach-on-abort'] as const) {
    if (values[flag] !== undefined && values[flag] !== false && !values.wait)
      throw invalidInput(`--${flag}: only with --wait`);
  }
  if (values.api !== undefined && values.redis !== undefined) throw invalidInput('--api and --redis: give one of them');
  if (values.api !== undefined && positionals.length > 1) throw invalidInput('--api: only with one mission file');
  if (!values.wait) return await submitParsed(positionals, values, config);
  const junit = values.junit as string | undefined;
  resetJunit(junit);
  let operationId: string | undefined;
  try {
    return await submitParsed(positionals, values, config, (id) => (operationId = id));
  } catch (error) {
    reportRefused(config.ci, { source: positionals[0] as string, operationId, junit }, error);
    throw error;
  }
}

type Values = ReturnType<typeof parseCommand>['values'];

async function submitParsed(
  positionals: string[],
  values: Values,
  config: UhConfig,
  onLoaded: (operationId: string) => void = () => undefined,
): Promise<number> {
  const timeoutS = values.timeout === undefined ? undefined : Number(values.timeout);
  const overrides = overridesOf(values, config);
  const missions = positionals.map((file) => loadMissionFile(file, repositoryPolicy(config.core, 'cli'), overrides));
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const runtime = values.runtime as string | undefined;
  if (missions[0]) onLoaded(missions[0].operation_id);
  if (values.api !== undefined)
    return (await import('../submit-over-api.js')).submitOverApi(missions[0] as Mission, config, {
      apiUrl: values.api as string,
      token: await apiToken(values.token as string | undefined, values.api as string, config),
      runtime,
      stateDir,
      wait: values.wait === true,
      json: values.json === true,
      junit: values.junit as string | undefined,
      timeoutS,
      detach: values['detach-on-abort'] === true,
      requireWorker: values['require-worker'] === true,
    });
  if (missions.length > 1)
    return submitMany(missions, {
      config,
      redis: values.redis as string | undefined,
      stateDir,
      runtime,
      json: values.json === true,
    });
  return submitOne(missions[0] as Mission, values, config, { stateDir, runtime, timeoutS });
}

/** One mission over Redis: submit (or attach), then with --wait follow it and report. */
async function submitOne(
  mission: Mission,
  values: Values,
  config: UhConfig,
  { stateDir, runtime, timeoutS }: { stateDir: string; runtime: string | undefined; timeoutS: number | undefined },
): Promise<number> {
  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, values.redis));
  try {
    await checkServed(client, runtime ?? [mission.runtime].flat()[0] ?? '', values['require-worker'] === true);
    const { submitOperation } = await import('../../submit.js');
    const submitted = await submitOperation(client, mission, {
      stateDir,
      cacheDir: config.core.cacheDir,
      host: hostSettingsOf(config),
      tenant: config.core.tenant,
      ...(runtime ? { runtime } : {}),
    });
    const id = mission.operation_id;
    const attached = submitted.kind === 'attached';
    if (!values.wait) {
      if (values.json)
        writeJson({
          operation_id: id,
          attached,
          state: submitted.record.state,
          queue: submitted.queue,
          job_id: submitted.record.job_id,
        });
      else
        process.stdout.write(
          `${attached ? 'attached to existing' : 'queued'} ${id} on ${submitted.queue} (state ${submitted.record.state})\nfollow: uh mission watch ${id}\n`,
        );
      return EXIT.ok;
    }
    if (!values.json)
      process.stderr.write(`uh: ${attached ? 'attached to' : 'queued'} ${id} on ${submitted.queue}; waiting…\n`);
    const wait: WaitOptions = {
      id,
      stateDir,
      attached,
      json: Boolean(values.json),
      junit: values.junit as string | undefined,
      detach: Boolean(values['detach-on-abort']),
      timeoutS,
    };
    return await waitAndReport(client, config, wait);
  } finally {
    await client.close();
  }
}

/** Several missions in one batch: one line (or one array entry) each; exit 2 if any conflicts. */
async function submitMany(
  missions: Mission[],
  o: { config: UhConfig; redis: string | undefined; stateDir: string; runtime: string | undefined; json: boolean },
): Promise<number> {
  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(o.config.queue, queueRedisUrl(o.config, o.redis));
  try {
    const { submitOperations } = await import('../../submit.js');
    const results = await submitOperations(client, missions, {
      stateDir: o.stateDir,
      cacheDir: o.config.core.cacheDir,
      host: hostSettingsOf(o.config),
      tenant: o.config.core.tenant,
      ...(o.runtime ? { runtime: o.runtime } : {}),
    });
    const rows = results.map((r, i) => {
      const id = (missions[i] as Mission).operation_id;
      if (r instanceof Error) return { operation_id: id, error: r.message };
      return {
        operation_id: id,
        attached: r.kind === 'attached',
        state: r.record.state,
        queue: r.queue,
        job_id: r.record.job_id,
      };
    });
    if (o.json) writeJson(rows);
    for (const row of o.json ? [] : rows) {
      if ('error' in row) process.stderr.write(`uh: ${row.error}\n`);
      else
        process.stdout.write(
          `${row.attached ? 'attached to existing' : 'queued'} ${row.operation_id} on ${row.queue} (state ${row.state})\n`,
        );
    }
    return rows.some((r) => 'error' in r) ? EXIT.invalid : EXIT.ok;
  } finally {
    await client.close();
  }
}

interface WaitOptions {
  id: string;
  stateDir: string;
  attached: boolean;
  json: boolean;
  junit: string | undefined;
  detach: boolean;
  timeoutS: number | undefined;
}

/**
 * Follow the operation until it settles. A SIGINT/SIGTERM (a cancelled CI job) stops the wait:
 * the operation is cancelled (or, with --detach-on-abort, left running), its id printed, exit 4.
 * A second signal exits at once.
 */
async function waitAndReport(client: QueueClient, config: UhConfig, o: WaitOptions): Promise<number> {
  const abort = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (abort.signal.aborted) process.exit(EXIT.cancelled);
    abort.abort(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const { tailOperation } = await import('../../../shared/queue/event-stream.js');
    const record = await tailOperation(client.store, o.id, {
      from: 'start',
      signal: abort.signal,
      ...(o.timeoutS !== undefined ? { timeoutMs: o.timeoutS * 1000 } : {}),
    });
    if (abort.signal.aborted) return await onAbort(client, config, o, String(abort.signal.reason));
    if (record === null || record.state === 'unknown') {
      const now = record ?? (await client.store.get(o.id));
      const message =
        record === null
          ? `operation ${o.id} is still ${now?.state ?? 'queued'} after ${o.timeoutS} s (it keeps running)`
          : `operation ${o.id} is unknown: ${record.unknown_reason ?? 'dispatch cannot be proven'}`;
      if (o.json)
        writeJson({
          operation_id: o.id,
          state: record === null ? 'wait_timed_out' : 'unknown',
          operation: now ? publicRecord(now) : null,
        });
      else
        process.stderr.write(
          `uh: ${message}\nhint: ${record === null ? `uh mission watch ${o.id}` : `uh mission recover ${o.id}`}\n`,
        );
      reportUnsettled(config.ci, o.id, record === null ? 'wait_timed_out' : 'unknown', message, o.junit);
      return EXIT.unknown;
    }
    return await materializeAndReport(client, config, o);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function materializeAndReport(client: QueueClient, config: UhConfig, o: WaitOptions): Promise<number> {
  const { materialize } = await import('../../queue/materialize.js');
  ensureStateDir(o.stateDir); // its .gitignore keeps the user's `git status` clean
  const got = await materialize(client.store, o.id, join(o.stateDir, 'collected', o.id));
  // The signature first: an unsigned or forged receipt is never reported (nor written to CI outputs) as the outcome.
  return reportCollected(config, o, got);
}

/** The wait was interrupted: cancel (unless detaching), then give the worker a moment to settle so outputs name the receipt. */
async function onAbort(client: QueueClient, config: UhConfig, o: WaitOptions, signal: string): Promise<number> {
  if (o.detach) {
    process.stderr.write(`uh: ${signal}: stopped waiting; ${o.id} keeps running\nhint: uh mission watch ${o.id}\n`);
    if (o.json) writeJson({ operation_id: o.id, state: 'detached' });
    reportUnsettled(config.ci, o.id, 'detached', `${signal}: stopped waiting; ${o.id} keeps running`, o.junit);
    return EXIT.cancelled;
  }
  const record = await client.store.get(o.id);
  const { cancelOperation } = await import('../../queue/cancel-operation.js');
  const outcome = record
    ? await cancelOperation(client, record, `${signal} to uh mission submit --wait`, config.receipts)
    : 'not found';
  process.stderr.write(`uh: ${signal}: ${o.id}: ${outcome}\n`);
  const { tailOperation } = await import('../../../shared/queue/event-stream.js');
  const settled = await tailOperation(client.store, o.id, { from: 'now', timeoutMs: 5000 });
  if (settled?.state === 'finished') {
    await materializeAndReport(client, config, o);
  } else {
    if (o.json) writeJson({ operation_id: o.id, state: 'cancel_requested' });
    reportUnsettled(config.ci, o.id, 'cancelled', `${signal}: cancel sent to ${o.id}`, o.junit);
  }
  process.stdout.write(o.json ? '' : `${o.id}\n`);
  return EXIT.cancelled;
}

/** Warn (or with --require-worker refuse, exit 3) when no live worker serves the runtime. */
async function checkServed(client: QueueClient, runtime: string, required: boolean): Promise<void> {
  const { liveWorkers } = await import('../../../shared/queue/live-workers.js');
  const workers = await liveWorkers(client.redis, client.store.keys);
  if (workers.some((w) => w.runtimes.includes(runtime))) return;
  const message = `no live worker serves runtime ${runtime} (${workers.length} live worker(s))`;
  const hint = `start one: uh worker start --runtime ${runtime}`;
  if (required) throw new UhError('runtime_unavailable', message, { hint });
  process.stderr.write(`uh: warning: ${message}; the mission waits on its queue until one starts\nhint: ${hint}\n`);
}
