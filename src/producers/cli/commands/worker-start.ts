import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { invalidInput, UhError } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/logger.js';
import type { WorkerEvent, WorkerProcess } from '../../../workers/worker-process.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';

export const WORKER_START: CommandSpec = {
  usage:
    'uh worker start [--runtime id …] [--concurrency N] [--global-concurrency N] [--grace ms|wait] [--allow-unready] [--results] [--consumer name] [--redis url] [--state-dir dir] [--metrics-port [host:]port] [--json]',
  summary:
    'Run a worker until SIGTERM/SIGINT. Runtime pool: one BullMQ worker per runtime queue (default: every registered runtime that is ready here). --concurrency N: at most N missions at once PER RUNTIME QUEUE in this process (2 runtimes × N = up to 2N). --global-concurrency N: at most N running at once on a runtime queue across the whole fleet. --results: the completion consumer (outbox → webhook), the batch queue (settles batches) and the dead-owner watch; alone it runs only that.',
  options: {
    ...COMMON_OPTIONS,
    redis: { type: 'string' },
    runtime: { type: 'string', multiple: true },
    concurrency: { type: 'string', default: '1' },
    'global-concurrency': { type: 'string' },
    grace: { type: 'string' },
    'allow-unready': { type: 'boolean', default: false },
    results: { type: 'boolean', default: false },
    consumer: { type: 'string' },
    'metrics-port': { type: 'string' },
  },
  details: [
    'Start: each runtime given with --runtime runs its check (as uh adapter check) first; one not ready exits 3 with the',
    "check's hint (--allow-unready starts anyway). Without --runtime, the runtimes that are not ready are skipped (said on stderr).",
    'Shutdown (drain): SIGTERM/SIGINT stops taking jobs, lets running missions finish for --grace ms (else $UH_WORKER_GRACE_MS,',
    'default 30000), then cancels them (cancelled receipts). --grace wait waits for running missions to end however long',
    '(rolling deploys: give the service manager a stop timeout above it). A second signal cancels at once.',
    'Every worker also: marks operations of dead workers unknown within 6 heartbeats ($UH_HEARTBEAT_MS), sweeps the',
    'cache at start and every $UH_GC_INTERVAL_MS (uh gc shows the policy), stops claiming below $UH_MIN_FREE_BYTES free.',
    'Lock timings: $UH_QUEUE_LOCK_MS (120000), $UH_QUEUE_STALLED_INTERVAL_MS (60000), $UH_QUEUE_MAX_STALLED (1); see docs/queue.md.',
    'Webhook: $UH_WEBHOOK_URL, signed with $UH_WEBHOOK_SECRET (X-Uh-Signature-256: sha256=<hmac>).',
    '--metrics-port: Prometheus metrics of the fleet at http://127.0.0.1:<port>/metrics (host:port to bind elsewhere), as the API serves them.',
    'Logs: every line is NDJSON: pino on stderr at $UH_LOG_LEVEL (workers default to info: claim, runtime start, phase end, settle) and the lifecycle lines (ready, stopping…) whatever the level; with --json the lifecycle lines go to stdout instead.',
    'The worker writes operation dirs to --state-dir (else $UH_STATE_DIR, else .harness/) and sandboxes to $UH_CACHE_DIR.',
  ],
  examples: [
    'uh worker start --runtime command --concurrency 4',
    'uh worker start --results',
    'uh worker start --runtime codex --runtime command --results',
  ],
};

function positiveInt(name: string, value: unknown): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw invalidInput(`--${name}: "${String(value)}" is not a positive integer`);
  return n;
}

/** `--metrics-port`: the fleet's Prometheus metrics on this host (docs/observability.md). */
async function startMetrics(
  listen: string | undefined,
  config: UhConfig['queue'],
  redisUrl: string,
  say: (event: string, data: Record<string, unknown>) => void,
) {
  if (listen === undefined) return null;
  const server = await (await import('../../http/metrics-server.js')).startMetricsServer(config, redisUrl, listen);
  say('metrics', { url: server.url });
  return server;
}

/** `--grace`: milliseconds, or `wait` (no limit: running missions end on their own). */
function parseGrace(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (value === 'wait') return Number.POSITIVE_INFINITY;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw invalidInput(`--grace: "${value}" is not a number of milliseconds or "wait"`);
  return n;
}

/**
 * Each runtime's check before serving it. Asked for by --runtime and not ready: exit 3 with the
 * check's hint (unless --allow-unready). Defaulted (every registered runtime): the unready ones are skipped.
 */
async function readyRuntimes(
  candidates: string[],
  o: {
    explicit: boolean;
    allowUnready: boolean;
    stateDir: string;
    config: UhConfig;
    redisUrl: string;
    say: WorkerEvent;
  },
): Promise<string[]> {
  const { checkRuntime } = await import('./adapter.js');
  const { connectRedis } = await import('../../../shared/queue/redis-connection.js');
  const { AdapterStore } = await import('../../../shared/queue/adapter-store.js');
  // A runtime with no manifest on this host resolves to the fleet's published one (uh adapter publish).
  const redis = await connectRedis(o.redisUrl, { name: 'uh-worker-start', cluster: o.config.queue.cluster });
  const manifests = new AdapterStore(redis, o.config.queue.prefix).source();
  try {
    return await checkEach(candidates, o, (id) => checkRuntime(id, o.stateDir, o.config, manifests));
  } finally {
    redis.disconnect();
  }
}

async function checkEach(
  candidates: string[],
  o: { explicit: boolean; allowUnready: boolean; say: WorkerEvent },
  check: (id: string) => ReturnType<typeof import('./adapter.js').checkRuntime>,
): Promise<string[]> {
  const ready: string[] = [];
  for (const id of candidates) {
    const { result, checked, source, digest } = await check(id);
    if (!source.startsWith('built-in ')) o.say('manifest', { runtime: id, digest, source });
    // An incomplete host config (command's argv) is completed by each mission: nothing to check here.
    if (result.ok || !checked) ready.push(id);
    else if (o.allowUnready) {
      o.say('unready-served', { runtime: id, summary: result.summary });
      ready.push(id);
    } else if (!o.explicit) o.say('runtime-skipped', { runtime: id, summary: result.summary });
    else
      throw new UhError(
        'runtime_unavailable',
        `runtime ${id} is not ready on this host: ${[result.summary, ...result.errors].join('; ')}`,
        {
          hint: result.hint ?? `run: uh adapter check ${id}; or pass --allow-unready`,
        },
      );
  }
  return ready;
}

/**
 * The worker's lifecycle lines (ready, stopping, completion, batch-settled…), whatever
 * UH_LOG_LEVEL says: with --json as JSON lines on stdout, else as pino NDJSON on stderr whose
 * `msg` is the readable line (`uh worker: ready worker=… runtimes=command`). Every line a worker
 * prints is NDJSON either way.
 */
function lifecycleLine(json: boolean): WorkerEvent {
  const log = createLogger('info', { log: 'worker' });
  return (event, data) =>
    json
      ? writeJson({ event, ...data })
      : log.info(
          { event, ...data },
          `uh worker: ${event} ${Object.entries(data)
            .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`)
            .join(' ')}`.trimEnd(),
        );
}

/** SIGTERM/SIGINT drains (for `graceMs`); a second signal cancels what still runs. */
function drainOnSignals(worker: WorkerProcess, graceMs: number, say: WorkerEvent): Promise<void> {
  let signals = 0;
  return new Promise<void>((resolve) => {
    const onSignal = (name: string) => {
      signals += 1;
      if (signals > 1) {
        say('cancelling', { signal: name, active: worker.active() });
        worker.cancelAll(`worker shutting down (second ${name})`);
        return;
      }
      say('stopping', { signal: name, active: worker.active(), grace_ms: Number.isFinite(graceMs) ? graceMs : 'wait' });
      void worker.shutdown(name, graceMs).then(() => resolve());
    };
    process.on('SIGTERM', () => onSignal('SIGTERM'));
    process.on('SIGINT', () => onSignal('SIGINT'));
  });
}

export async function workerStart(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(WORKER_START, argv);
  if (values.help) return (void process.stdout.write(`${helpText(WORKER_START)}\n`), EXIT.ok);
  if (positionals.length > 0)
    throw invalidInput(`uh worker start takes no arguments (got ${positionals.join(' ')})`, [], WORKER_START.usage);
  const concurrency = positiveInt('concurrency', values.concurrency);
  const globalConcurrency =
    values['global-concurrency'] === undefined
      ? undefined
      : positiveInt('global-concurrency', values['global-concurrency']);
  const queueConfig = config.queue;
  const graceMs = parseGrace(values.grace as string | undefined, queueConfig.graceMs);
  const redisUrl = queueRedisUrl(config, values.redis);
  const { RUNTIME_IDS } = await import('../../../workers/runtimes/registry.js');
  const asked = (values.runtime as string[] | undefined) ?? [];
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const candidates = asked.length > 0 ? asked : values.results ? [] : [...RUNTIME_IDS];
  const { compileSettings } = await import('../../../operation/settings.js');
  const settings = compileSettings(config, { stateDir, logger: createLogger(config.core.workerLogLevel) });
  void settings.limitBackend; // probed now: UH_LIMIT_BACKEND=cgroup with no cgroup here is exit 2 before anything starts
  if (candidates.length > 0) {
    // A bad or missing signing key is exit 2 before anything connects (the runtime pool loads it the same way).
    const { loadReceiptKey } = await import('../../../operation/receipt-keys.js');
    loadReceiptKey(settings.receiptKey, true);
  }
  const say = lifecycleLine(values.json === true);
  const runtimes = await readyRuntimes(candidates, {
    explicit: asked.length > 0,
    allowUnready: values['allow-unready'] === true,
    stateDir,
    config,
    redisUrl,
    say,
  });

  const metricsServer = await startMetrics(values['metrics-port'] as string | undefined, queueConfig, redisUrl, say);
  const { startWorkerProcess } = await import('../../../workers/worker-process.js');
  const consumer = (values.consumer as string | undefined) ?? null;
  const worker = await startWorkerProcess({
    settings,
    queue: queueConfig,
    redisUrl,
    runtimes,
    concurrency,
    ...(globalConcurrency ? { globalConcurrency } : {}),
    gc: config.gc,
    results: values.results ? { consumer } : false,
    onEvent: say,
  });
  const done = drainOnSignals(worker, graceMs, say);
  // "ready" only once the signal handlers are in place: a SIGTERM right after it drains, never kills.
  if (worker.workerId) say('ready', { worker: worker.workerId, runtimes, concurrency, pid: process.pid });
  await done;
  await metricsServer?.close();
  say('stopped', {});
  return EXIT.ok;
}
