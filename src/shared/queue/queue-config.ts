/**
 * Queue-mode settings, parsed once from the environment with zod. Errors name the option and
 * the environment variable. Defaults are the production values documented in docs/queue.md;
 * tests lower the lock and stall timings to see a dead worker within seconds.
 */
import { z } from 'zod';
import { invalidInput } from '../errors.js';

const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const QueueEnvSchema = z.object({
  REDIS_URL: z.string().url().optional(),
  UH_REDIS_PREFIX: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, . _ - only (no ":")').default('uh'),
  UH_QUEUE_LOCK_MS: ms(120_000),
  UH_QUEUE_STALLED_INTERVAL_MS: ms(60_000),
  UH_QUEUE_MAX_STALLED: z.coerce.number().int().nonnegative().default(1),
  UH_WORKER_GRACE_MS: z.coerce.number().int().nonnegative().default(30_000),
  UH_HEARTBEAT_MS: ms(5_000),
  UH_ARTIFACT_CAP_BYTES: ms(2 * 1024 * 1024),
  UH_WEBHOOK_URL: z.string().url().optional(),
  UH_WEBHOOK_SECRET: z.string().min(1).optional(),
  UH_WEBHOOK_ATTEMPTS: z.coerce.number().int().positive().default(5),
  UH_WEBHOOK_BACKOFF_MS: ms(500),
  UH_RETRY_MAX_ATTEMPTS: z.coerce.number().int().positive().optional(),
});

const OPTION_OF: Record<string, string> = {
  REDIS_URL: '--redis',
  UH_REDIS_PREFIX: 'Redis key prefix',
  UH_QUEUE_LOCK_MS: 'job lock duration',
  UH_QUEUE_STALLED_INTERVAL_MS: 'stalled-job check interval',
  UH_QUEUE_MAX_STALLED: 'stalls before a job fails',
  UH_WORKER_GRACE_MS: 'shutdown grace period',
  UH_HEARTBEAT_MS: 'worker heartbeat interval',
  UH_ARTIFACT_CAP_BYTES: 'artifact size cap',
  UH_WEBHOOK_URL: 'completion webhook',
  UH_WEBHOOK_SECRET: 'webhook signing secret',
  UH_WEBHOOK_ATTEMPTS: 'webhook attempts',
  UH_WEBHOOK_BACKOFF_MS: 'webhook first backoff',
  UH_RETRY_MAX_ATTEMPTS: 'attempts per operation under the retry policy',
};

export interface QueueConfig {
  /** Explicit `--redis`, else `REDIS_URL`, else null (not in queue mode). */
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
}

export function loadQueueConfig(flagRedis?: string, env: Readonly<Record<string, string | undefined>> = process.env): QueueConfig {
  const redisUrl = flagRedis || env.REDIS_URL || undefined; // an empty REDIS_URL means unset
  const result = QueueEnvSchema.safeParse({ ...env, REDIS_URL: redisUrl });
  if (!result.success) {
    const details = result.error.issues.map((i) => {
      const key = String(i.path[0]);
      return `${OPTION_OF[key] ?? key} (environment ${key}): ${i.message}`;
    });
    throw invalidInput('invalid queue configuration', details);
  }
  const e = result.data;
  return {
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
  };
}

/** The Redis URL of a queue command, or a clear error when none is configured. */
export function requireRedisUrl(config: QueueConfig): string {
  if (config.redisUrl) return config.redisUrl;
  throw invalidInput('no Redis configured for queue mode', [], 'pass --redis redis://host:6379 or set REDIS_URL (inline runs: uh mission run)');
}
