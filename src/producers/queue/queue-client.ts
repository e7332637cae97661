/**
 * A producer's handle on queue mode: one Redis connection, the operation store, and BullMQ
 * queues opened on demand (one per runtime). Close it when done.
 */
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { QueueConfig } from '../../shared/config.js';
import { connectRedis } from '../../shared/queue/redis-connection.js';
import { OperationStore } from '../../shared/queue/operation-store.js';
import { openArtifactStore } from '../../shared/artifacts/open-artifact-store.js';
import { queueName } from '../../shared/queue/topology.js';

export class QueueClient {
  private readonly queues = new Map<string, Queue>();

  private constructor(
    readonly config: QueueConfig,
    readonly redis: Redis,
    readonly store: OperationStore,
  ) {}

  /** Connect to `redisUrl` (the caller picked it: `--redis`, `REDIS_URL` or the default). */
  static async open(config: QueueConfig, redisUrl: string): Promise<QueueClient> {
    const redis = await connectRedis(redisUrl, { name: 'uh-producer', cluster: config.cluster });
    return new QueueClient(
      config,
      redis,
      new OperationStore(redis, config.prefix, openArtifactStore(config.artifactStore)),
    );
  }

  async queue(runtimeId: string): Promise<Queue> {
    return this.queueNamed(queueName(runtimeId));
  }

  /** A BullMQ queue by its name (`runtime.<id>`, `batch`). */
  async queueNamed(name: string): Promise<Queue> {
    let queue = this.queues.get(name);
    if (!queue) {
      const { Queue: BullQueue } = await import('bullmq');
      queue = new BullQueue(name, { connection: this.redis, prefix: this.store.keys.bullPrefix });
      queue.on('error', () => undefined);
      this.queues.set(name, queue);
    }
    return queue;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
    this.redis.disconnect();
  }
}
