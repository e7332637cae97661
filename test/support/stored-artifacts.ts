/**
 * A settled operation's artifacts as the fleet stored them (the artifact store its environment
 * names; `UH_CACHE_DIR/artifacts` by default), and the forgery an attacker with write access to
 * Redis and the store could make: a new manifest with one artifact replaced, the record repointed.
 */
import type { Redis } from 'ioredis';
import { loadConfig } from '../../src/shared/config.js';
import { openArtifactStore } from '../../src/shared/artifacts/open-artifact-store.js';
import { OperationStore } from '../../src/shared/queue/operation-store.js';

function storeFor(redis: Redis, env: Record<string, string | undefined>): OperationStore {
  const config = loadConfig(env);
  return new OperationStore(redis, config.queue.prefix, openArtifactStore(config.queue.artifactStore));
}

export async function storedArtifact(
  redis: Redis,
  env: Record<string, string | undefined>,
  operationId: string,
  name: string,
): Promise<string | null> {
  return storeFor(redis, env).artifact(operationId, name);
}

/** Replace artifacts of a settled operation: new blobs, a new manifest, the record's pointer rewritten. */
export async function forgeStoredArtifacts(
  redis: Redis,
  env: Record<string, string | undefined>,
  operationId: string,
  replace: Record<string, string>,
): Promise<void> {
  const store = storeFor(redis, env);
  const all = await store.artifacts(operationId);
  const pointer = await store.artifactStore!.putOperation(operationId, 1, { ...all, ...replace });
  await redis.hset(store.keys.op(operationId), 'artifacts', pointer.slice('sha256:'.length));
}
