import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/logger.js';
import { COMMON_OPTIONS, helpText, parseCommand, queueRedisUrl, resolveStateDir, writeJson, type CommandSpec } from '../cli-kit.js';

export const WORKER_START: CommandSpec = {
  usage: 'uh worker start [--runtime id …] [--concurrency N] [--global-concurrency N] [--results] [--consumer name] [--redis url] [--state-dir dir] [--json]',
  summary:
    'Run a worker until SIGTERM/SIGINT. Runtime pool: one BullMQ worker per runtime queue (default: every registered runtime), N missions at once. --results: the completion consumer (outbox → webhook); alone it runs only that.',
  options: {
    ...COMMON_OPTIONS,
    redis: { type: 'string' },
    runtime: { type: 'string', multiple: true },
    concurrency: { type: 'string', default: '1' },
    'global-concurrency': { type: 'string' },
    results: { type: 'boolean', default: false },
    consumer: { type: 'string' },
  },
  details: [
    'Shutdown: SIGTERM/SIGINT stops taking jobs, lets running missions finish for $UH_WORKER_GRACE_MS (default 30000),',
    'then cancels them (cancelled receipts). A second signal cancels at once.',
    'Lock timings: $UH_QUEUE_LOCK_MS (120000), $UH_QUEUE_STALLED_INTERVAL_MS (60000), $UH_QUEUE_MAX_STALLED (1); see docs/queue.md.',
    'Webhook: $UH_WEBHOOK_URL, signed with $UH_WEBHOOK_SECRET (X-Uh-Signature-256: sha256=<hmac>).',
    'The worker writes operation dirs to --state-dir (else $UH_STATE_DIR, else .harness/) and sandboxes to $UH_CACHE_DIR.',
  ],
  examples: ['uh worker start --runtime command --concurrency 4', 'uh worker start --results', 'uh worker start --runtime codex --runtime command --results'],
};

function positiveInt(name: string, value: unknown): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw invalidInput(`--${name}: "${String(value)}" is not a positive integer`);
  return n;
}

/** Automatic promotion (mission `promotion: branch`) of a verified completion, reported on the worker's output. */
async function promoteCompletion(
  store: import('../../../shared/queue/operation-store.js').OperationStore,
  completion: import('../../../shared/queue/operation-store.js').Completion,
  context: { cacheDir: string; logger: import('../../../shared/logger.js').Logger; env: Readonly<Record<string, string | undefined>> },
  say: (event: string, data: Record<string, unknown>) => void,
): Promise<void> {
  const { promoteAfterCompletion } = await import('../../../workers/promotion/auto-promote.js');
  const record = await promoteAfterCompletion(store, completion, context);
  if (record) say('promotion', { operation_id: completion.operation_id, decision: record.decision, branch: record.branch, commit: record.commit ?? '-', reason: record.reason ?? '-' });
}

export async function workerStart(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(WORKER_START, argv);
  if (values.help) return void process.stdout.write(`${helpText(WORKER_START)}\n`), EXIT.ok;
  if (positionals.length > 0) throw invalidInput(`uh worker start takes no arguments (got ${positionals.join(' ')})`, [], WORKER_START.usage);
  const concurrency = positiveInt('concurrency', values.concurrency);
  const globalConcurrency = values['global-concurrency'] === undefined ? undefined : positiveInt('global-concurrency', values['global-concurrency']);
  const queueConfig = config.queue;
  const redisUrl = queueRedisUrl(config, values.redis);
  const { RUNTIME_ADAPTERS } = await import('../../../workers/runtimes/registry.js');
  const asked = (values.runtime as string[] | undefined) ?? [];
  const runtimes = asked.length > 0 ? asked : values.results ? [] : RUNTIME_ADAPTERS.map((a) => a.id);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const logger = createLogger(config.core.logLevel);
  const say = (event: string, data: Record<string, unknown>) =>
    values.json ? writeJson({ event, ...data }) : process.stderr.write(`uh worker: ${event} ${Object.entries(data).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`).join(' ')}\n`);

  const stop = new AbortController();
  const tasks: Promise<void>[] = [];
  let pool: Awaited<ReturnType<typeof import('../../../workers/pools/runtime-pool.js').startRuntimePool>> | null = null;
  if (runtimes.length > 0) {
    const { startRuntimePool } = await import('../../../workers/pools/runtime-pool.js');
    pool = await startRuntimePool({
      redisUrl,
      config: queueConfig,
      runtimes,
      concurrency,
      ...(globalConcurrency ? { globalConcurrency } : {}),
      stateDir,
      cacheDir: config.core.cacheDir,
      logger,
      sandboxKeepHours: config.core.sandboxKeepHours,
      keepSandbox: config.core.keepSandbox,
      isolation: config.core.isolation,
    });
    say('ready', { worker: pool.workerId, runtimes, concurrency, pid: process.pid });
  }
  if (values.results) {
    const { connectRedis } = await import('../../../shared/queue/redis-connection.js');
    const { OperationStore } = await import('../../../shared/queue/operation-store.js');
    const { runCompletionConsumer, ensureResultsGroup } = await import('../../../workers/results/completion-consumer.js');
    const redis = await connectRedis(redisUrl, { name: 'uh-results' });
    const store = new OperationStore(redis, queueConfig.prefix);
    await ensureResultsGroup(redis, store.keys.outbox);
    const consumer = (values.consumer as string | undefined) ?? (await import('node:os')).hostname();
    say('results-ready', { consumer, webhook: queueConfig.webhook ? 'on' : 'off', pid: process.pid });
    tasks.push(
      runCompletionConsumer({
        store,
        consumer,
        webhook: queueConfig.webhook,
        logger,
        signal: stop.signal,
        afterCompletion: (c) => promoteCompletion(store, c, { cacheDir: config.core.cacheDir, logger, env: config.childEnv }, say),
        onCompletion: (c, d) => say('completion', { operation_id: c.operation_id, state: c.state, status: c.status ?? '-', exit_code: c.exit_code, delivery: d.id, webhook: d.webhook ? (d.webhook.ok ? 'delivered' : `failed:${d.webhook.error}`) : 'off' }),
      }).finally(() => redis.disconnect()),
    );
  }

  let signals = 0;
  const done = new Promise<void>((resolve) => {
    const onSignal = (name: string) => {
      signals += 1;
      if (signals > 1) {
        say('cancelling', { signal: name, active: pool?.active() ?? [] });
        pool?.cancelAll(`worker shutting down (second ${name})`);
        return;
      }
      say('stopping', { signal: name, active: pool?.active() ?? [], grace_ms: queueConfig.graceMs });
      stop.abort();
      void Promise.allSettled([pool?.shutdown(name, queueConfig.graceMs), ...tasks]).then(() => resolve());
    };
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
  });
  await done;
  say('stopped', {});
  return EXIT.ok;
}
