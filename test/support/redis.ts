/**
 * A real Redis for integration tests: `REDIS_URL` (default redis://127.0.0.1:6379) when it
 * answers; else, when Docker is available, a throwaway container through testcontainers; else a
 * clear failure. Each test file gets its own key prefix and removes its keys afterwards.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export interface TestRedis {
  url: string;
  /** A fresh prefix for a test file (or one scenario in it). */
  prefix: (name: string) => string;
  redis: Redis;
  cleanup: () => Promise<void>;
}

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1500,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

function dockerAvailable(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

export async function startTestRedis(fileTag: string): Promise<TestRedis> {
  let url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  let stopContainer: (() => Promise<unknown>) | null = null;
  if (!(await answers(url))) {
    if (!dockerAvailable()) {
      throw new Error(`no Redis answers at ${url} and Docker is not available: start redis-server or set REDIS_URL`);
    }
    const { GenericContainer } = await import('testcontainers');
    const container = await new GenericContainer('redis:7-alpine').withExposedPorts(6379).start();
    url = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
    stopContainer = () => container.stop();
  }
  const base = `uht-${fileTag}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const redis = new Redis(url, { maxRetriesPerRequest: null });
  return {
    url,
    prefix: (name) => `${base}-${name}`,
    redis,
    cleanup: async () => {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `*${base}-*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== '0');
      redis.disconnect();
      await stopContainer?.();
    },
  };
}
