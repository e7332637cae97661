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
import type { HostPolicy, HostSettings } from './host-policy.js';
import { DEFAULT_TMPFS_BYTES } from './process/bwrap-argv.js';
import type { LimitBackendMode } from './process/cgroup-probe.js';
import { DEFAULT_LIMITS, type MissionLimits } from './process/mission-limits.js';
import type { ArtifactStoreSetting } from './artifacts/open-artifact-store.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** `UH_ISOLATION`: bubblewrap for runtimes and checks where it works, required, or off. */
export type IsolationMode = 'auto' | 'require' | 'off';
/** `UH_SANDBOX_BACKEND`: overlay where it works (`auto`), always (`overlay`: refuse where it cannot), never (`worktree`). */
export type SandboxBackendSetting = 'auto' | 'overlay' | 'worktree';

/** `UH_DIFF_CAP_BYTES` when unset: the most bytes a mission's `diff.patch` keeps (50 MiB). */
export const DEFAULT_DIFF_CAP_BYTES = 50 * 1024 * 1024;

/** Where a queue command connects when neither `--redis` nor `REDIS_URL` says (as BullMQ does). */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/**
 * One variable: its schema (built only when the variable is set: most runs set few, and building
 * and running ~45 zod schemas was ~4 ms of every CLI start), the option it sets (named in errors)
 * and its value when unset.
 */
interface Variable<T> {
  /** Parses to a `T` (the overloads of `v` tie the two). */
  schema: () => z.ZodType;
  option: string;
  fallback: T;
}
function v<S extends z.ZodType>(schema: () => S, option: string): Variable<z.output<S> | undefined>;
function v<S extends z.ZodType>(schema: () => S, option: string, fallback: z.output<S>): Variable<z.output<S>>;
function v<S extends z.ZodType>(
  schema: () => S,
  option: string,
  fallback?: z.output<S>,
): Variable<z.output<S> | undefined> {
  return { schema, option, fallback };
}

const text = () => z.string();
const flagValue = () => z.enum(['0', '1', 'true', 'false']);
const count = () => z.coerce.number().int().nonnegative();
const ms = () => z.coerce.number().int().positive();
const days = () => z.coerce.number().nonnegative();
const positive = () => z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER);
/** `NAME,PREFIX_*,…`: environment variable names or prefixes, as `sandbox.env_passthrough` takes them. */
const nameList = () =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n !== ''),
    )
    .pipe(
      z.array(
        z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}\*?$/, 'each entry: a variable name, or a prefix ending in *'),
      ),
    );

/** `team-a=2,team-b=4,*=1`: tenant=max running (`*`: every other tenant); unset: no quota. */
const tenantQuotas = () =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== ''),
    )
    .pipe(
      z.array(
        z
          .string()
          .regex(/^(\*|[A-Za-z0-9][A-Za-z0-9._-]{0,63})=\d{1,6}$/, 'each entry: tenant=N or *=N (N running at most)'),
      ),
    )
    .transform((entries) => {
      const quotas: { default: number | null; tenants: Record<string, number> } = { default: null, tenants: {} };
      for (const e of entries) {
        const [tenant, n] = e.split('=') as [string, string];
        if (tenant === '*') quotas.default = Number(n);
        else quotas.tenants[tenant] = Number(n);
      }
      return quotas;
    });

/** Each variable of the environment uh reads (docs/configuration.md lists them all). */
const VARIABLES = {
  // core
  UH_STATE_DIR: v(text, '--state-dir'),
  UH_CACHE_DIR: v(text, 'cache dir'),
  XDG_CACHE_HOME: v(text, 'cache dir (XDG base)'),
  UH_LOG_LEVEL: v(
    () => z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
    'log level (default warn; workers info)',
  ),
  UH_DEBUG: v(text, 'stack traces on internal errors'),
  UH_SANDBOX_KEEP_HOURS: v(days, 'sandbox retention (hours)', 24),
  UH_KEEP_SANDBOX: v(flagValue, 'keep every sandbox'),
  UH_SANDBOX_POOL_SIZE: v(count, 'warm sandboxes kept per repository mirror (0 = no pool)', 2),
  UH_SANDBOX_POOL_IDLE_MINUTES: v(days, 'idle lifetime of a warm sandbox (minutes)', 30),
  UH_SANDBOX_BACKEND: v(
    () => z.enum(['auto', 'overlay', 'worktree']),
    'how sandboxes are made: worktree (a checkout each), overlay (copy-on-write over a shared base), auto',
    'worktree',
  ),
  UH_ALLOW_LOCAL_REPOS: v(flagValue, 'allow local repository paths'),
  UH_ALLOW_HTTP_REPOS: v(flagValue, 'allow http:// repository URLs'),
  UH_PRICES: v(text, 'price table (JSON)'),
  UH_PRICES_FILE: v(text, 'price table file (JSON)'),
  UH_RESIDENT: v(
    () => z.enum(['auto', 'off']),
    'uh mission run hands its run to a resident uh of this cache dir (uh daemon start): auto, or off (never)',
    'auto',
  ),
  UH_ISOLATION: v(() => z.enum(['auto', 'require', 'off']), 'OS isolation of runtimes and checks (bubblewrap)', 'auto'),
  UH_GIT_FAST_PATH: v(flagValue, 'in-process git fast path of the diff and the ref lookup (0 = git processes only)'),
  UH_DIFF_CAP_BYTES: v(
    ms,
    "size cap of a mission's diff.patch (bytes; past it: truncated, never promoted)",
    DEFAULT_DIFF_CAP_BYTES,
  ),
  // host policy: what a mission may ask for (shared/host-policy.ts)
  UH_ALLOW_MISSION_ISOLATION_OFF: v(flagValue, "honour a mission's sandbox.isolation: off (never under require)"),
  UH_ALLOW_MISSION_NETWORK_HOST: v(flagValue, "honour a mission's sandbox.network: host (the host's whole network)"),
  UH_SECRETS_DIR: v(
    () => z.string().min(1),
    'worker: where {secret_ref: name} values of sandbox.env are read (<dir>/<name>)',
  ),
  UH_ENV_PASSTHROUGH_ALLOW: v(nameList, 'names a mission may pass through with sandbox.env_passthrough', []),
  UH_ISOLATION_TMPFS_BYTES: v(
    () =>
      z.coerce
        .number()
        .int()
        .min(1024 * 1024, 'at least 1048576 (1 MiB)')
        .max(Number.MAX_SAFE_INTEGER),
    'size cap of an isolated private /tmp and home (bytes)',
    DEFAULT_TMPFS_BYTES,
  ),
  UH_ISOLATION_READABLE: v(
    () =>
      z
        .string()
        .refine((s) => s.split(':').every((p) => p === '' || p.startsWith('/')), 'colon-separated absolute paths'),
    'paths every isolated process may read (colon-separated)',
  ),
  // per-mission limits (shared/process/mission-limits.ts); a mission's sandbox.limits only lowers them
  UH_LIMIT_BACKEND: v(
    () => z.enum(['auto', 'cgroup', 'rlimit']),
    'what holds the processes and memory limits: auto (a delegated cgroup v2, else writable cgroup v1, else rlimits), cgroup (insist), rlimit',
    'auto',
  ),
  UH_LIMIT_PROCESSES: v(positive, 'processes (tasks) per mission', DEFAULT_LIMITS.processes),
  UH_LIMIT_MEMORY_BYTES: v(positive, 'memory per mission (bytes)', DEFAULT_LIMITS.memory_bytes),
  UH_LIMIT_SHM_BYTES: v(positive, '/dev/shm per mission (bytes)', DEFAULT_LIMITS.shm_bytes),
  UH_LIMIT_WORKTREE_BYTES: v(positive, 'worktree bytes per mission', DEFAULT_LIMITS.worktree_bytes),
  UH_LIMIT_WORKTREE_FILES: v(positive, 'worktree entries per mission', DEFAULT_LIMITS.worktree_files),
  // queue
  REDIS_URL: v(() => z.string().url(), '--redis'),
  UH_REDIS_CLUSTER: v(flagValue, 'Redis Cluster mode (REDIS_URL names a seed node)'),
  UH_REDIS_PASSWORD_FILE: v(
    () => z.string().min(1),
    "file holding the password of the Redis URL's user (a mounted secret; docs/deploy.md)",
  ),
  UH_REDIS_PREFIX: v(
    () => z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, . _ - only (no ":")'),
    'Redis key prefix',
    'uh',
  ),
  UH_QUEUE_LOCK_MS: v(ms, 'job lock duration', 120_000),
  UH_QUEUE_STALLED_INTERVAL_MS: v(ms, 'stalled-job check interval', 60_000),
  UH_QUEUE_MAX_STALLED: v(count, 'stalls before a job fails', 1),
  UH_BATCH_ERROR_RETRIES: v(count, 'automatic retries of a batch child lost to the infrastructure', 2),
  UH_WORKER_GRACE_MS: v(count, 'shutdown grace period', 30_000),
  UH_HEARTBEAT_MS: v(ms, 'worker heartbeat interval', 2_000),
  UH_ARTIFACT_CAP_BYTES: v(ms, 'artifact size cap', 2 * 1024 * 1024),
  UH_ARTIFACT_STORE: v(
    () =>
      z
        .string()
        .regex(
          /^(dir:\/.*|s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?)$/,
          'dir:/absolute/path or s3://bucket/prefix',
        ),
    'artifact store',
  ),
  UH_ARTIFACT_STORE_S3_FILE: v(
    () => z.string().startsWith('/', 'an absolute path'),
    'S3 endpoint, region and credentials of the artifact store (JSON file)',
  ),
  UH_EVENT_RETENTION_MINUTES: v(days, "minutes a settled operation's events stay in Redis", 60),
  UH_WEBHOOK_URL: v(() => z.string().url(), 'completion webhook'),
  UH_WEBHOOK_SECRET: v(text, 'webhook signing secret'),
  UH_WEBHOOK_ATTEMPTS: v(() => z.coerce.number().int().positive(), 'webhook attempts', 5),
  UH_WEBHOOK_BACKOFF_MS: v(ms, 'webhook first backoff', 500),
  UH_RETRY_MAX_ATTEMPTS: v(() => z.coerce.number().int().positive(), 'attempts per operation under the retry policy'),
  // receipts
  UH_RECEIPT_KEY: v(() => z.string().min(32, 'at least 32 characters'), 'receipt signing key'),
  UH_RECEIPT_KEY_FILE: v(text, 'receipt signing key file'),
  UH_RECEIPT_SIGNING_KEY: v(
    () => z.string().includes('PRIVATE KEY', { message: 'a PEM private key (-----BEGIN PRIVATE KEY-----)' }),
    'Ed25519 receipt signing key (PEM)',
  ),
  UH_RECEIPT_SIGNING_KEY_FILE: v(text, 'Ed25519 receipt signing key file (PEM, PKCS#8)'),
  UH_RECEIPT_PUBLIC_KEYS: v(text, 'receipt public keys (PEM files or directories of *.pub, comma-separated)'),
  // fleet: disk bounds (workers/sandbox/gc.ts)
  UH_GC_INTERVAL_MS: v(ms, 'retention sweep interval', 10 * 60_000),
  UH_MIRROR_IDLE_DAYS: v(days, 'mirror idle days before removal', 14),
  UH_OPERATION_RETENTION_DAYS: v(days, 'operation dir and record retention (days)', 30),
  UH_CACHE_CAP_BYTES: v(count, 'cache size cap (0 = none)', 0),
  UH_MIN_FREE_BYTES: v(count, 'free-disk floor below which a worker stops claiming', 1024 * 1024 * 1024),
  // api and tenants
  UH_API_TOKEN: v(text, 'API bearer token (an admin token)'),
  UH_API_TOKENS_FILE: v(text, 'API tokens file: SHA-256 hashes with tenant and scopes'),
  UH_API_ACCESS_LOG: v(flagValue, 'API access log, one NDJSON line per request on stderr (default on)'),
  UH_TENANT: v(
    () => z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, . _ - (at most 64)'),
    'tenant of CLI and inline producers and of the API admin token',
    'default',
  ),
  UH_TENANT_QUOTAS: v(tenantQuotas, 'most operations running at once per tenant across the fleet (worker)'),
  UH_TENANT_QUOTA_RETRY_MS: v(ms, 'delay of a job whose tenant is at its quota (worker)', 1000),
  // ci
  GITHUB_OUTPUT: v(text, 'GitHub Actions step outputs file'),
  GITHUB_STEP_SUMMARY: v(text, 'GitHub Actions step summary file (Markdown)'),
  GITHUB_ACTIONS: v(text, 'set to true by GitHub Actions: print ::error annotations'),
  GITHUB_SHA: v(text, 'the commit a CI run tests: {sha} in an operation_id template'),
  GITHUB_RUN_ID: v(text, 'the CI run: {run_id} in an operation_id template'),
  GITHUB_RUN_ATTEMPT: v(text, 'the CI run attempt: {run_attempt} in an operation_id template'),
} as const;

type Key = keyof typeof VARIABLES;
type Parsed = { [K in Key]: (typeof VARIABLES)[K] extends Variable<infer T> ? T : never };

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
  /** `UH_ARTIFACT_STORE`: where receipts, diffs, logs and transcripts go (default `dir:<cache>/artifacts`). */
  artifactStore: ArtifactStoreSetting;
  /** `UH_EVENT_RETENTION_MINUTES`: a settled operation's event stream is trimmed from Redis after this. */
  eventRetentionMs: number;
  webhook: { url: string; secret: string | null; attempts: number; backoffMs: number } | null;
  /** Overrides every retry rule's maxAttempts (1 = never retry); unset = the policy's own. */
  retryMaxAttempts: number | null;
  /** `UH_REDIS_CLUSTER=1`: the Redis URL names a seed node of a Redis Cluster. */
  cluster: boolean;
  /** `UH_BATCH_ERROR_RETRIES`: retries per batch slot of an infrastructure error (0: none). */
  batchErrorRetries: number;
  /** `UH_REDIS_PASSWORD_FILE`: the password of a Redis URL that has none (its role's ACL user). */
  passwordFile: string | null;
  /** `UH_TENANT_QUOTAS`: per tenant, the most operations running at once across the fleet (checked at claim); null: none. */
  tenantQuotas: { default: number | null; tenants: Record<string, number> } | null;
  /** `UH_TENANT_QUOTA_RETRY_MS`: how long a job over its tenant's quota waits (delayed) before it is tried again. */
  quotaRetryMs: number;
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
    /** `UH_SANDBOX_BACKEND`: `worktree` (default), `overlay` (copy-on-write, docs/sandboxes.md), `auto`. */
    sandboxBackend: SandboxBackendSetting;
    /** Local paths and file:// as repository.url; unset: allowed on the CLI, refused by the HTTP API. */
    allowLocalRepos: boolean | undefined;
    /** Plain http:// as repository.url (default off). */
    allowHttpRepos: boolean;
    /** USD per million tokens by runtime id or model (`UH_PRICES`, else `UH_PRICES_FILE`); {} when unset. */
    prices: PriceTable;
    /** bubblewrap for runtimes and checks: auto (where it works), require (refuse without), off. */
    isolation: IsolationMode;
    /** The size cap of each isolated phase's private /tmp and home (tmpfs), in bytes. */
    isolationTmpfsBytes: number;
    /** `UH_ISOLATION_READABLE`: read-only inside every sandbox (never a secret location); [] when unset. */
    isolationReadable: string[];
    /** `UH_GIT_FAST_PATH` (default on): uh answers some git questions itself (workers/git-path.ts); off: git does. */
    gitFastPath: boolean;
    /** `UH_DIFF_CAP_BYTES`: the most bytes a mission's `diff.patch` keeps; the receipt says when it was cut. */
    diffCapBytes: number;
    /** `UH_LIMIT_BACKEND`: what holds processes and memory (shared/process/cgroup-probe.ts). */
    limitBackend: LimitBackendMode;
    /** `UH_LIMIT_*`: each mission's ceiling (docs/security.md#limits); a mission may only lower them. */
    limits: MissionLimits;
    /** `UH_SECRETS_DIR`: the files `{secret_ref: name}` in `sandbox.env` resolve to (`<dir>/<name>`). */
    secretsDir: string | null;
    /** `UH_TENANT`: the tenant CLI and inline producers submit under (default `default`). */
    tenant: string;
  };
  /** What a mission may ask of this host: checked by producers and again by workers on every job. */
  policy: HostPolicy;
  queue: QueueConfig;
  gc: GcConfig;
  api: { token: string | undefined; /** `UH_API_ACCESS_LOG` (default on). */ accessLog: boolean };
  /** Receipt keys (src/operation/receipt-keys.ts). Private keys and secrets: never logged. */
  receipts: ReceiptsConfig;
  ci: {
    githubOutput: string | undefined;
    stepSummary: string | undefined;
    annotations: boolean;
    /** The CI run's operation_id template variables (GITHUB_SHA, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT). */
    run: { sha: string | undefined; run_id: string | undefined; run_attempt: string | undefined };
  };
  /**
   * The process environment as given, for passing through to runtime children and adapter
   * checks (provider keys, PATH, HOME). Never logged.
   */
  childEnv: Env;
}

/** Every set variable through its schema, every unset one its fallback; all problems reported at once. */
function parseEnv(env: Env): Parsed {
  const out: Record<string, unknown> = {};
  const details: string[] = [];
  for (const [key, variable] of Object.entries(VARIABLES) as Array<[Key, Variable<unknown>]>) {
    const raw = env[key];
    if (raw === undefined || raw === '') {
      out[key] = variable.fallback;
      continue;
    }
    const result = variable.schema().safeParse(raw);
    if (result.success) out[key] = result.data;
    else details.push(...result.error.issues.map((i) => `${variable.option} (environment ${key}): ${i.message}`));
  }
  if (details.length > 0)
    throw invalidInput(
      'invalid configuration in the environment',
      details,
      'fix or unset the variable; every variable is listed in docs/configuration.md',
    );
  return out as Parsed;
}

/** Where receipt keys come from; the shape of `ReceiptKeySource` (src/operation/receipt-keys.ts). */
export interface ReceiptsConfig {
  /** `UH_RECEIPT_KEY`: an HMAC secret (single host). */
  key: string | undefined;
  /** `UH_RECEIPT_KEY_FILE`, default `<cacheDir>/receipt.key` (HMAC; read to verify older receipts). */
  keyFile: string;
  /** Ed25519 unless only an HMAC key is configured (UH_RECEIPT_KEY or UH_RECEIPT_KEY_FILE). */
  signer: 'ed25519' | 'hmac';
  /** `UH_RECEIPT_SIGNING_KEY`: the Ed25519 private key as a PEM value. */
  signingKey: string | undefined;
  /** `UH_RECEIPT_SIGNING_KEY_FILE`, default `<cacheDir>/receipt-signing.pem`. */
  signingKeyFile: string;
  /** Nothing Ed25519 configured: the default file is made on first signing. */
  createSigningKey: boolean;
  /** `UH_RECEIPT_PUBLIC_KEYS`, split on commas. */
  publicKeys: string[];
}

function receiptsConfig(e: Parsed, cacheDir: string): ReceiptsConfig {
  const ed25519 = e.UH_RECEIPT_SIGNING_KEY !== undefined || e.UH_RECEIPT_SIGNING_KEY_FILE !== undefined;
  const hmac = e.UH_RECEIPT_KEY !== undefined || e.UH_RECEIPT_KEY_FILE !== undefined;
  return {
    key: e.UH_RECEIPT_KEY,
    keyFile: e.UH_RECEIPT_KEY_FILE ?? join(cacheDir, 'receipt.key'),
    signer: ed25519 || !hmac ? 'ed25519' : 'hmac',
    signingKey: e.UH_RECEIPT_SIGNING_KEY,
    signingKeyFile: e.UH_RECEIPT_SIGNING_KEY_FILE ?? join(cacheDir, 'receipt-signing.pem'),
    createSigningKey: !ed25519,
    publicKeys: (e.UH_RECEIPT_PUBLIC_KEYS ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== ''),
  };
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
      sandboxBackend: e.UH_SANDBOX_BACKEND,
      allowLocalRepos: flag(e.UH_ALLOW_LOCAL_REPOS),
      allowHttpRepos: flag(e.UH_ALLOW_HTTP_REPOS) ?? false,
      prices: parsePrices(e.UH_PRICES, e.UH_PRICES_FILE),
      isolation: e.UH_ISOLATION,
      isolationTmpfsBytes: e.UH_ISOLATION_TMPFS_BYTES,
      isolationReadable: (e.UH_ISOLATION_READABLE ?? '').split(':').filter((p) => p !== ''),
      gitFastPath: flag(e.UH_GIT_FAST_PATH) ?? true,
      diffCapBytes: e.UH_DIFF_CAP_BYTES,
      limitBackend: e.UH_LIMIT_BACKEND,
      limits: {
        processes: e.UH_LIMIT_PROCESSES,
        memory_bytes: e.UH_LIMIT_MEMORY_BYTES,
        shm_bytes: e.UH_LIMIT_SHM_BYTES,
        worktree_bytes: e.UH_LIMIT_WORKTREE_BYTES,
        worktree_files: e.UH_LIMIT_WORKTREE_FILES,
      },
      secretsDir: e.UH_SECRETS_DIR ?? null,
      tenant: e.UH_TENANT,
    },
    policy: {
      allowMissionIsolationOff: flag(e.UH_ALLOW_MISSION_ISOLATION_OFF) ?? false,
      allowMissionNetworkHost: flag(e.UH_ALLOW_MISSION_NETWORK_HOST) ?? false,
      envPassthroughAllow: e.UH_ENV_PASSTHROUGH_ALLOW,
    },
    queue: queueConfig(e, cacheDir),
    gc: {
      intervalMs: e.UH_GC_INTERVAL_MS,
      mirrorIdleDays: e.UH_MIRROR_IDLE_DAYS,
      operationRetentionDays: e.UH_OPERATION_RETENTION_DAYS,
      cacheCapBytes: e.UH_CACHE_CAP_BYTES,
      minFreeBytes: e.UH_MIN_FREE_BYTES,
    },
    api: { token: e.UH_API_TOKEN, accessLog: flag(e.UH_API_ACCESS_LOG) ?? true },
    receipts: receiptsConfig(e, cacheDir),
    ci: {
      githubOutput: e.GITHUB_OUTPUT,
      stepSummary: e.GITHUB_STEP_SUMMARY,
      annotations: e.GITHUB_ACTIONS === 'true',
      run: { sha: e.GITHUB_SHA, run_id: e.GITHUB_RUN_ID, run_attempt: e.GITHUB_RUN_ATTEMPT },
    },
    childEnv: env,
  };
}

/** The queue section: Redis, the fleet's timings, the artifact store, webhooks, tenants' quotas. */
function queueConfig(e: Parsed, cacheDir: string): UhConfig['queue'] {
  return {
    redisUrl: e.REDIS_URL ?? null,
    prefix: e.UH_REDIS_PREFIX,
    lockMs: e.UH_QUEUE_LOCK_MS,
    stalledIntervalMs: e.UH_QUEUE_STALLED_INTERVAL_MS,
    maxStalledCount: e.UH_QUEUE_MAX_STALLED,
    batchErrorRetries: e.UH_BATCH_ERROR_RETRIES,
    graceMs: e.UH_WORKER_GRACE_MS,
    heartbeatMs: e.UH_HEARTBEAT_MS,
    artifactCapBytes: e.UH_ARTIFACT_CAP_BYTES,
    ...artifactSettings(e, cacheDir),
    webhook: e.UH_WEBHOOK_URL
      ? {
          url: e.UH_WEBHOOK_URL,
          secret: e.UH_WEBHOOK_SECRET ?? null,
          attempts: e.UH_WEBHOOK_ATTEMPTS,
          backoffMs: e.UH_WEBHOOK_BACKOFF_MS,
        }
      : null,
    retryMaxAttempts: e.UH_RETRY_MAX_ATTEMPTS ?? null,
    cluster: flag(e.UH_REDIS_CLUSTER) ?? false,
    passwordFile: e.UH_REDIS_PASSWORD_FILE ?? null,
    tenantQuotas: e.UH_TENANT_QUOTAS ?? null,
    quotaRetryMs: e.UH_TENANT_QUOTA_RETRY_MS,
  };
}

const S3FileSchema = z
  .object({
    endpoint: z.string().url().optional(),
    region: z.string().min(1).default('us-east-1'),
    access_key_id: z.string().min(1).optional(),
    secret_access_key: z.string().min(1).optional(),
    session_token: z.string().min(1).optional(),
    force_path_style: z.boolean().default(false),
  })
  .strict()
  .refine((f) => (f.access_key_id === undefined) === (f.secret_access_key === undefined), {
    message: 'access_key_id and secret_access_key go together',
  });

function artifactSettings(e: Parsed, cacheDir: string): Pick<QueueConfig, 'artifactStore' | 'eventRetentionMs'> {
  return {
    artifactStore: artifactStoreSetting(e.UH_ARTIFACT_STORE, e.UH_ARTIFACT_STORE_S3_FILE, cacheDir),
    eventRetentionMs: Math.round(e.UH_EVENT_RETENTION_MINUTES * 60_000),
  };
}

/** `UH_ARTIFACT_STORE` (+ its S3 file): the store every host of a fleet must name alike. */
function artifactStoreSetting(
  store: string | undefined,
  s3File: string | undefined,
  cacheDir: string,
): ArtifactStoreSetting {
  if (store === undefined || store.startsWith('dir:')) {
    return { kind: 'dir', root: store === undefined ? join(cacheDir, 'artifacts') : store.slice('dir:'.length) };
  }
  const [bucket = '', ...rest] = store.slice('s3://'.length).split('/');
  const prefix = rest.filter((p) => p !== '').join('/');
  const fail = (why: string) =>
    invalidInput(
      'invalid configuration in the environment',
      [`artifact store S3 file (environment UH_ARTIFACT_STORE_S3_FILE): ${why}`],
      'a JSON file: {"endpoint": "https://…", "region": "…", "access_key_id": "…", "secret_access_key": "…"} (docs/deploy.md)',
    );
  let file: z.infer<typeof S3FileSchema> = { region: 'us-east-1', force_path_style: false };
  if (s3File !== undefined) {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(s3File, 'utf8'));
    } catch (error) {
      throw fail(`cannot read ${s3File} as JSON (${(error as NodeJS.ErrnoException).code ?? 'not JSON'})`);
    }
    const parsed = S3FileSchema.safeParse(raw);
    // Issues name the field, never its value (the file holds credentials).
    if (!parsed.success)
      throw fail(parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; '));
    file = parsed.data;
  }
  const credentials = file.access_key_id
    ? {
        accessKeyId: file.access_key_id,
        secretAccessKey: file.secret_access_key as string,
        ...(file.session_token ? { sessionToken: file.session_token } : {}),
      }
    : null;
  return {
    kind: 's3',
    bucket,
    prefix,
    endpoint: file.endpoint ?? null,
    region: file.region,
    forcePathStyle: file.force_path_style,
    credentials,
  };
}

/** What the producers' and workers' host policy checks need: the isolation mode and the policy. */
export function hostSettingsOf(config: UhConfig): HostSettings {
  return { isolation: config.core.isolation, policy: config.policy, gitFastPath: config.core.gitFastPath };
}

function parsePrices(inline: string | undefined, file: string | undefined): PriceTable {
  if (inline === undefined && file === undefined) return {};
  const [name, source] =
    inline !== undefined ? ['UH_PRICES', () => inline] : ['UH_PRICES_FILE', () => readFileSync(file as string, 'utf8')];
  const fail = (why: string) =>
    invalidInput(
      'invalid configuration in the environment',
      [`price table (environment ${name}): ${why}`],
      'e.g. UH_PRICES=\'{"codex":{"input_per_mtok":1.25,"output_per_mtok":10}}\'',
    );
  let json: unknown;
  try {
    json = JSON.parse(source());
  } catch (error) {
    throw fail((error as Error).message);
  }
  const parsed = PriceTableSchema.safeParse(json);
  if (!parsed.success)
    throw fail(parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  return parsed.data;
}

/**
 * The Redis a queue command uses: `--redis` wins, then `REDIS_URL`, else DEFAULT_REDIS_URL
 * with `defaulted: true` (the caller says so on stderr).
 */
export function redisUrlFor(queue: QueueConfig, flag?: string): { url: string; defaulted: boolean } {
  if (flag) {
    const parsed = z.string().url().safeParse(flag);
    if (!parsed.success)
      throw invalidInput(`--redis: "${flag}" is not a URL`, [], 'e.g. --redis redis://127.0.0.1:6379');
    return { url: withPasswordFile(flag, queue.passwordFile), defaulted: false };
  }
  if (queue.redisUrl) return { url: withPasswordFile(queue.redisUrl, queue.passwordFile), defaulted: false };
  return { url: withPasswordFile(DEFAULT_REDIS_URL, queue.passwordFile), defaulted: true };
}

/**
 * A URL with no password gets the one in UH_REDIS_PASSWORD_FILE (first line), so deploy files keep
 * the password in a secret and the URL (`redis://uh-worker@redis:6379`) in plain config.
 */
function withPasswordFile(url: string, file: string | null): string {
  if (!file) return url;
  const u = new URL(url);
  if (u.password) return url;
  let password: string;
  try {
    password = (readFileSync(file, 'utf8').split(/\r?\n/)[0] ?? '').trim();
  } catch (error) {
    throw invalidInput(
      `UH_REDIS_PASSWORD_FILE: cannot read ${file}: ${(error as Error).message}`,
      [],
      "mount the role's Redis password secret there",
    );
  }
  if (!password)
    throw invalidInput(`UH_REDIS_PASSWORD_FILE: ${file} is empty`, [], "write the role's Redis password in it");
  u.password = encodeURIComponent(password);
  return u.toString();
}
