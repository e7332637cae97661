/**
 * One way to open Redis: ioredis imported lazily (the inline CLI never loads it), BullMQ's
 * required `maxRetriesPerRequest: null`, and a clear error naming the URL when nobody answers.
 */
import type { Redis } from 'ioredis';
import { UhError } from '../errors.js';

export interface ConnectOptions {
  name?: string;
  /** `UH_REDIS_CLUSTER=1`: the URL names one seed node of a Redis Cluster (docs/deploy.md). */
  cluster?: boolean;
}

/** How long a command on a Redis Cluster retries through MOVED, CLUSTERDOWN, TRYAGAIN and a closed connection. */
const FAILOVER_PATIENCE = {
  maxRedirections: 60,
  retryDelayOnFailover: 250,
  retryDelayOnClusterDown: 250,
  retryDelayOnTryAgain: 250,
} as const;

/**
 * A client for `url`: a plain ioredis client, or with `cluster` an ioredis `Cluster` seeded from
 * the URL's node (it discovers the others). The Cluster speaks the same commands, `duplicate()`
 * and `defineCommand()` included, and BullMQ accepts it, so callers type both as `Redis`.
 */
async function createClient(url: string, options: ConnectOptions): Promise<Redis> {
  const { Redis: RedisClient, Cluster } = await import('ioredis');
  const common = { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: options.name ?? 'uh' };
  if (!options.cluster)
    return new RedisClient(url, {
      ...common,
      lazyConnect: true,
      retryStrategy: (times) => Math.min(times * 200, 2000),
    });
  const u = new URL(url);
  const redisOptions = {
    ...common,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  const cluster = new Cluster([{ host: u.hostname, port: Number(u.port || 6379) }], {
    lazyConnect: true,
    enableReadyCheck: true,
    redisOptions,
    clusterRetryStrategy: (times) => Math.min(times * 200, 2000),
    // A command waits out a failover instead of failing the operation it serves: ioredis's defaults
    // (16 redirections, 100 ms apart) give up after ~1.6 s, a master's failover takes ~2 ×
    // cluster-node-timeout plus the election (3.2–5 s with 2 s here). 60 × 250 ms = 15 s.
    ...FAILOVER_PATIENCE,
  });
  return cluster as unknown as Redis;
}

export async function connectRedis(url: string, options: ConnectOptions = {}): Promise<Redis> {
  const redis = await createClient(url, options);
  redis.on('error', () => undefined); // surfaced by the commands that fail; never an unhandled event
  try {
    await Promise.race([
      redis.connect(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s')), 5000).unref()),
    ]);
  } catch (error) {
    redis.disconnect();
    throw new UhError('runtime_unavailable', `cannot reach Redis at ${safeUrl(url)}: ${(error as Error).message}`, {
      hint: 'is redis-server running? pass --redis redis://host:6379 or set REDIS_URL',
      cause: error,
    });
  }
  return redis;
}

/** The URL without its password, for messages. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<invalid url>';
  }
}
