/**
 * One real-Redis `OperationStore` per test file: made in `beforeAll` on a fresh key prefix,
 * disconnected and its keys removed in `afterAll`. `fx.store` and `fx.redis` are valid inside tests.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { OperationStore } from '../../src/shared/queue/operation-store.js';
import { startTestRedis, type TestRedis } from './redis.js';

export function useOperationStore(
  fileTag: string,
  prefixTag: string,
): { readonly store: OperationStore; readonly redis: TestRedis } {
  let redis: TestRedis | undefined;
  let store: OperationStore | undefined;
  beforeAll(async () => {
    redis = await startTestRedis(fileTag);
    store = new OperationStore(new Redis(redis.url, { maxRetriesPerRequest: null }), redis.prefix(prefixTag));
  });
  afterAll(async () => {
    store?.redis.disconnect();
    await redis?.cleanup();
  });
  return {
    get store() {
      return store as OperationStore;
    },
    get redis() {
      return redis as TestRedis;
    },
  };
}
