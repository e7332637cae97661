/**
 * The one configuration module: the environment is parsed here ONCE (zod), at process start
 * (the CLI's entry point), and the parsed `UhConfig` is passed down; nothing else in `src/`
 * reads `process.env` (test/architecture/env-reads.test.ts enforces it, apart from the places
 * that pass a runtime's environment through to its child). Errors name the option AND the
 * environment variable and are `invalid_input` (exit 2). An empty variable counts as unset.
 * Every variable is listed in docs/configuration.md.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { invalidInput } from './errors.js';
import { PriceTableSchema, type PriceTable } from './prices.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** Where a queue command connects when neither `--redis` nor `REDIS_URL` says (as BullMQ does). */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** Each variable: its schema and the option it sets (named in errors). */
const VARIABLES = {
  // core
  UH_STATE_DIR: [z.string().optional(), '--state-dir'],
  UH_CACHE_DIR: [z.string().optional(), 'cache dir'],
  XDG_CACHE_HOME: [z.string().optional(), 'cache dir (XDG base)'],
  UH_LOG_LEVEL: [z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).optional(), 'log level (default warn; workers info)'],
  UH_DEBUG: [z.string().optional(), 'stack traces on internal errors'],
  UH_SANDBOX_KEEP_HOURS: [z.coerce.number().nonnegative().default(24), 'sandbox retention (hours)'],
  UH_KEEP_SANDBOX: [z.enum(['0', '1', 'true', 'false']).optional(), 'keep every sandbox'],
  UH_SANDBOX_POOL_SIZE: [z.coerce.number().int().nonnegative().default(2), 'warm sandboxes kept per repository mirror (0 = no pool)'],
  UH_SANDBOX_POOL_IDLE_MINUTES: [z.coerce.number().nonnegative().default(30), 'idle lifetime of a warm sandbox (minutes)'],
  UH_ALLOW_LOCAL_REPOS: [z.enum(['0', '1', 'true', 'false']).optional(), 'allow local repository paths'],
  UH_ALLOW_HTTP_REPOS: [z.enum(['0', '1', 'true', 'false']).optional(), 'allow http:// repository URLs'],
  UH_PRICES: [z.string().optional(), 'price table (JSON)'],
  UH_PRICES_FILE: [z.string().optional(), 'price table file (JSON)'],
  UH_ISOLATION: [z.enum(['auto', 'require', 'off']).default('auto'), 'OS isolation of runtimes and checks (bubblewrap)'],
  UH_ISOLATION_TMPFS_BYTES: [z.coerce.number().int().min(1024 * 1024, 'at least 1048576 (1 MiB)').max(Number.MAX_SAFE_INTEGER).default(1024 ** 3), 'size cap of an isolated private /tmp and home (bytes)'],
  // queue
  REDIS_URL: [z.string().url().optional(), '--redis'],
  UH_REDIS_CLUSTER: [z.enum(['0', '1', 'true', 'false']).optional(), 'Redis Cluster mode (REDIS_URL names a seed node)'],
  UH_REDIS_PREFIX: [z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, . _ - only (no ":")').default('uh'), 'Redis key prefix'],
  UH_QUEUE_LOCK_MS: [ms(120_000), 'job lock duration'],
  UH_QUEUE_STALLED_INTERVAL_MS: [ms(60_000), 'stalled-job check interval'],
  UH_QUEUE_MAX_STALLED: [z.coerce.number().int().nonnegative().default(1), 'stalls before a job fails'],
  UH_WORKER_GRACE_MS: [z.coerce.number().int().nonnegative().default(30_000), 'shutdown grace period'],
  UH_HEARTBEAT_MS: [ms(5_000), 'worker heartbeat interval'],
  UH_ARTIFACT_CAP_BYTES: [ms(2 * 1024 * 1024), 'artifact size cap'],
  UH_WEBHOOK_URL: [z.string().url().optional(), 'completion webhook'],
  UH_WEBHOOK_SECRET: [z.string().optional(), 'webhook signing secret'],
  UH_WEBHOOK_ATTEMPTS: [z.coerce.number().int().positive().default(5), 'webhook attempts'],
  UH_WEBHOOK_BACKOFF_MS: [ms(500), 'webhook first backoff'],
  UH_RETRY_MAX_ATTEMPTS: [z.coerce.number().int().positive().optional(), 'attempts per operation under the retry policy'],
  // receipts
  UH_RECEIPT_KEY: [z.string().min(32, 'at least 32 characters').optional(), 'receipt signing key'],
  UH_RECEIPT_KEY_FILE: [z.string().optional(), 'receipt signing key file'],
  // fleet: disk bounds (workers/sandbox/gc.ts)
  UH_GC_INTERVAL_MS: [ms(10 * 60_000), 'retention sweep interval'],
  UH_MIRROR_IDLE_DAYS: [z.coerce.number().nonnegative().default(14), 'mirror idle days before removal'],
  UH_OPERATION_RETENTION_DAYS: [z.coerce.number().nonnegative().default(30), 'operation dir and record retention (days)'],
  UH_CACHE_CAP_BYTES: [z.coerce.number().int().nonnegative().default(0), 'cache size cap (0 = none)'],
  UH_MIN_FREE_BYTES: [z.coerce.number().int().nonnegative().default(1024 * 1024 * 1024), 'free-disk floor below which a worker stops claiming'],
  // api
  UH_API_TOKEN: [z.string().optional(), 'API bearer token'],
  // ci
  GITHUB_OUTPUT: [z.string().optional(), 'GitHub Actions step outputs file'],
  GITHUB_STEP_SUMMARY: [z.string().optional(), 'GitHub Actions step summary file (Markdown)'],
  GITHUB_ACTIONS: [z.string().optional(), 'set to true by GitHub Actions: print ::error annotations'],
} as const;

type Key = keyof typeof VARIABLES;
const EnvSchema = z.object(Object.fromEntries(Object.entries(VARIABLES).map(([k, [schema]]) => [k, schema])) as { [K in Key]: (typeof VARIABLES)[K][0] });

export interface QueueConfig {
  /** `REDIS_URL`, or null when unset (a queue command then uses `redisUrlFor`'s default). */
  redisUrl: string | null;
  prefix: string;
  lockMs: number;
  stalledIntervalMs: number;
  maxStalledCount: number;
  graceMs: number;
  heartbeatMs: number;
  artifactCapBytes: number;
  webhook: { url: string; secret: string | null; attempts: number; backoffMs: number } | null;
  /** Overrides every retry rule's maxAttempts (1 = never retry); unset = the policy's own. */
  retryMaxAttempts: number | null;
  /** `UH_REDIS_CLUSTER=1`: the Redis URL names a seed node of a Redis Cluster. */
  cluster: boolean;
}

/** Disk bounds of a worker host (docs/deploy.md, "Disk"). */
export interface GcConfig {
  intervalMs: number;
  mirrorIdleDays: number;
  operationRetentionDays: number;
  /** Total bytes of sandboxes + mirrors; 0 = no cap. */
  cacheCapBytes: number;
  /** Below this much free space on the cache's filesystem a worker stops claiming jobs. */
  minFreeBytes: number;
}

export interface UhConfig {
  core: {
    /** `UH_STATE_DIR`; `--state-dir` wins over it (see the CLI's resolveStateDir). */
    stateDir: string | undefined;
    cacheDir: string;
    logLevel: string;
    /** Workers log one line per claim, runtime start, phase end and settle: `info` unless UH_LOG_LEVEL says otherwise. */
    workerLogLevel: string;
    debug: boolean;
    sandboxKeepHours: number;
    keepSandbox: boolean;
    /** The warm pool (workers/sandbox/sandbox-pool.ts): clean sandboxes kept per mirror, and for how long. */
    sandboxPool: { size: number; idleMs: number };
    /** Local paths and file:// as repository.url; unset: allowed on the CLI, refused by the HTTP API. */
    allowLocalRepos: boolean | undefined;
    /** Plain http:// as repository.url (default off). */
    allowHttpRepos: boolean;
    /** USD per million tokens by runtime id or model (`UH_PRICES`, else `UH_PRICES_FILE`); {} when unset. */
    prices: PriceTable;
    /** bubblewrap for runtimes and checks: auto (where it works), require (refuse without), off. */
    isolation: 'auto' | 'require' | 'off';
    /** The size cap of each isolated phase's private /tmp and home (tmpfs), in bytes. */
    isolationTmpfsBytes: number;
  };
  queue: QueueConfig;
  gc: GcConfig;
  api: { token: string | undefined };
  /** The receipt signing key: `UH_RECEIPT_KEY`, else the file (default `<cacheDir>/receipt.key`). Never logged. */
  receipts: { key: string | undefined; keyFile: string };
  ci: { githubOutput: string | undefined; stepSummary: string | undefined; annotations: boolean };
  /**
   * The process environment as given, for passing through to runtime children and adapter
   * checks (provider keys, PATH, HOME). Never logged.
   */
  childEnv: Env;
}

function parseEnv(env: Env) {
  const set = Object.fromEntries(Object.keys(VARIABLES).filter((k) => env[k] !== undefined && env[k] !== '').map((k) => [k, env[k]]));
  const result = EnvSchema.safeParse(set);
  if (!result.success) {
    const details = result.error.issues.map((i) => {
      const key = String(i.path[0]) as Key;
      return `${VARIABLES[key]?.[1] ?? key} (environment ${key}): ${i.message}`;
    });
    throw invalidInput('invalid configuration in the environment', details, 'fix or unset the variable; every variable is listed in docs/configuration.md');
  }
  return result.data;
}

const flag = (v: string | undefined): boolean | undefined => (v === undefined ? undefined : v === '1' || v === 'true');

/** Parse the environment once; call at process start and pass the result down. */
export function loadConfig(env: Env = process.env): UhConfig {
  const e = parseEnv(env);
  const cacheDir = e.UH_CACHE_DIR ?? join(e.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'uh');
  return {
    core: {
      stateDir: e.UH_STATE_DIR,
      cacheDir,
      logLevel: e.UH_LOG_LEVEL ?? 'warn',
      workerLogLevel: e.UH_LOG_LEVEL ?? 'info',
      debug: e.UH_DEBUG !== undefined,
      sandboxKeepHours: e.UH_SANDBOX_KEEP_HOURS,
      keepSandbox: e.UH_KEEP_SANDBOX === '1' || e.UH_KEEP_SANDBOX === 'true',
      sandboxPool: { size: e.UH_SANDBOX_POOL_SIZE, idleMs: Math.round(e.UH_SANDBOX_POOL_IDLE_MINUTES * 60_000) },
      allowLocalRepos: flag(e.UH_ALLOW_LOCAL_REPOS),
      allowHttpRepos: flag(e.UH_ALLOW_HTTP_REPOS) ?? false,
      prices: parsePrices(e.UH_PRICES, e.UH_PRICES_FILE),
      isolation: e.UH_ISOLATION,
      isolationTmpfsBytes: e.UH_ISOLATION_TMPFS_BYTES,
    },
    queue: {
      redisUrl: e.REDIS_URL ?? null,
      prefix: e.UH_REDIS_PREFIX,
      lockMs: e.UH_QUEUE_LOCK_MS,
      stalledIntervalMs: e.UH_QUEUE_STALLED_INTERVAL_MS,
      maxStalledCount: e.UH_QUEUE_MAX_STALLED,
      graceMs: e.UH_WORKER_GRACE_MS,
      heartbeatMs: e.UH_HEARTBEAT_MS,
      artifactCapBytes: e.UH_ARTIFACT_CAP_BYTES,
      webhook: e.UH_WEBHOOK_URL
        ? { url: e.UH_WEBHOOK_URL, secret: e.UH_WEBHOOK_SECRET ?? null, attempts: e.UH_WEBHOOK_ATTEMPTS, backoffMs: e.UH_WEBHOOK_BACKOFF_MS }
        : null,
      retryMaxAttempts: e.UH_RETRY_MAX_ATTEMPTS ?? null,
      cluster: flag(e.UH_REDIS_CLUSTER) ?? false,
    },
    gc: {
      intervalMs: e.UH_GC_INTERVAL_MS,
      mirrorIdleDays: e.UH_MIRROR_IDLE_DAYS,
      operationRetentionDays: e.UH_OPERATION_RETENTION_DAYS,
      cacheCapBytes: e.UH_CACHE_CAP_BYTES,
      minFreeBytes: e.UH_MIN_FREE_BYTES,
    },
    api: { token: e.UH_API_TOKEN },
    receipts: { key: e.UH_RECEIPT_KEY, keyFile: e.UH_RECEIPT_KEY_FILE ?? join(cacheDir, 'receipt.key') },
    ci: { githubOutput: e.GITHUB_OUTPUT, stepSummary: e.GITHUB_STEP_SUMMARY, annotations: e.GITHUB_ACTIONS === 'true' },
    childEnv: env,
  };
}

function parsePrices(inline: string | undefined, file: string | undefined): PriceTable {
  const [name, source] = inline !== undefined ? ['UH_PRICES', () => inline] : file !== undefined ? ['UH_PRICES_FILE', () => readFileSync(file, 'utf8')] : [null, () => '{}'];
  const fail = (why: string) => invalidInput('invalid configuration in the environment', [`price table (environment ${name}): ${why}`], 'e.g. UH_PRICES=\'{"codex":{"input_per_mtok":1.25,"output_per_mtok":10}}\'');
  let json: unknown;
  try {
    json = JSON.parse(source());
  } catch (error) {
    throw fail((error as Error).message);
  }
  const parsed = PriceTableSchema.safeParse(json);
  if (!parsed.success) throw fail(parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  return parsed.data;
}

/**
 * The Redis a queue command uses: `--redis` wins, then `REDIS_URL`, else DEFAULT_REDIS_URL
 * with `defaulted: true` (the caller says so on stderr).
 */
export function redisUrlFor(queue: QueueConfig, flag?: string): { url: string; defaulted: boolean } {
  if (flag) {
    const parsed = z.string().url().safeParse(flag);
    if (!parsed.success) throw invalidInput(`--redis: "${flag}" is not a URL`, [], 'e.g. --redis redis://127.0.0.1:6379');
    return { url: flag, defaulted: false };
  }
  if (queue.redisUrl) return { url: queue.redisUrl, defaulted: false };
  return { url: DEFAULT_REDIS_URL, defaulted: true };
}
