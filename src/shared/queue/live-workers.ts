/**
 * The live workers of a fleet: their heartbeat keys (`<p>:worker:<id>`, refreshed every
 * heartbeat, expiring after three). On a Redis Cluster every master is scanned (the keys share
 * one hash tag, so they sit on one of them).
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { QueueKeys } from './topology.js';

const HeartbeatSchema = z.object({
  id: z.string(),
  /** runtime: runs missions; results: the outbox consumer (older workers wrote no role: runtime). */
  role: z.enum(['runtime', 'results']).default('runtime'),
  host: z.string(),
  pid: z.number(),
  runtimes: z.array(z.string()).default([]),
  concurrency: z.number().optional(),
  active: z.array(z.string()).default([]),
  /** The id of the key the worker signs receipts with (null or absent: none, or an older worker). */
  receipt_key_id: z.string().nullable().optional(),
  disk_free_bytes: z.number().nullable().optional(),
  disk_floor_bytes: z.number().optional(),
  at: z.string(),
});
export type Heartbeat = z.infer<typeof HeartbeatSchema>;

async function scanAll(redis: Redis, pattern: string): Promise<string[]> {
  const cluster = redis as unknown as { nodes?: (role: string) => Redis[] };
  const nodes = typeof cluster.nodes === 'function' ? cluster.nodes('master') : [redis];
  const keys: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
  }
  return keys;
}

export async function liveWorkers(redis: Redis, keys: QueueKeys): Promise<Heartbeat[]> {
  const found: Heartbeat[] = [];
  for (const key of await scanAll(redis, keys.worker('*'))) {
    const text = await redis.get(key);
    const parsed = text ? HeartbeatSchema.safeParse(JSON.parse(text)) : null;
    if (parsed?.success) found.push(parsed.data);
  }
  return found;
}
