/**
 * One way to open Redis: ioredis imported lazily (the inline CLI never loads it), BullMQ's
 * required `maxRetriesPerRequest: null`, and a clear error naming the URL when nobody answers.
 */
import type { Redis } from 'ioredis';
import { UhError } from '../errors.js';

export async function connectRedis(url: string, options: { name?: string } = {}): Promise<Redis> {
  const { Redis: RedisClient } = await import('ioredis');
  const redis = new RedisClient(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    lazyConnect: true,
    connectionName: options.name ?? 'uh',
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
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
