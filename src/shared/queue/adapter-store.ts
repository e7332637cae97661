/**
 * The fleet's shared adapter manifests (`uh adapter publish`, docs/deploy.md "Shared adapter
 * manifests"): a manifest published once is served to every producer and worker of the fleet,
 * so custom runtimes (`my-codex` of kind `codex`) need no copy on each host.
 *
 *   {<p>}/adapters            hash: id → the current record (JSON: manifest, digest, who, when)
 *   {<p>}/adapters:versions   hash: <id>@<digest> → that record (every version ever published)
 *
 * The keys sit beside the fleet's `{<p>}:*` (the same hash tag, so one Cluster slot) but outside
 * that pattern, so the ACL can give them to the producer and API roles to write and to the
 * worker roles to read only (redis-acl.ts): a worker host cannot change what the others run.
 * Every read recomputes the digest of the stored manifest and refuses a record that does not
 * match it (a hand-edited or truncated value), naming the key.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { ManifestSource, SharedManifest } from '../contracts/adapter-manifest.js';
import { digestOf } from '../digest.js';
import { UhError } from '../errors.js';
import { taggedPrefix } from './topology.js';

export const PublishedManifestSchema = z.strictObject({
  id: z.string().min(1),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  published_by: z.string().min(1),
  published_at: z.string().min(1),
  manifest: z.record(z.string(), z.unknown()),
});
export type PublishedManifest = z.infer<typeof PublishedManifestSchema>;

export function adapterKeys(prefix: string) {
  const tag = taggedPrefix(prefix);
  return { current: `${tag}/adapters`, versions: `${tag}/adapters:versions`, pattern: `${tag}/adapters*` };
}

export interface PublishResult {
  record: PublishedManifest;
  /** The digest it replaced; null for the first version. */
  previous: string | null;
}

export class AdapterStore {
  readonly keys: ReturnType<typeof adapterKeys>;
  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = adapterKeys(prefix);
  }

  /** Store `manifest` (already parsed strictly) as the current version of its id. */
  async publish(manifest: { id: string }, by: string, now = new Date()): Promise<PublishResult> {
    const record: PublishedManifest = {
      id: manifest.id,
      digest: digestOf(manifest),
      published_by: by,
      published_at: now.toISOString(),
      manifest: manifest as Record<string, unknown>,
    };
    const previous = await this.get(manifest.id).catch(() => undefined);
    const json = JSON.stringify(record);
    try {
      await this.redis
        .multi()
        .hset(this.keys.current, manifest.id, json)
        .hset(this.keys.versions, `${manifest.id}@${record.digest}`, json)
        .exec();
    } catch (error) {
      // A worker role's user may only read these keys: Redis refuses the write (NOPERM, the MULTI aborted).
      if (/NOPERM|EXECABORT/.test(String((error as Error).message))) throw refusedWrite(this.keys.current, error);
      throw error;
    }
    return { record, previous: previous?.digest ?? null };
  }

  /** The current version of `id`, its digest checked; undefined when none was published. */
  async get(id: string): Promise<PublishedManifest | undefined> {
    const raw = await this.redis.hget(this.keys.current, id);
    return raw === null ? undefined : this.check(id, raw);
  }

  /** Every published id's current version (a record that fails its check is reported as an error). */
  async list(): Promise<Array<PublishedManifest | { id: string; error: string }>> {
    const all = await this.redis.hgetall(this.keys.current);
    return Object.keys(all)
      .sort()
      .map((id) => {
        try {
          return this.check(id, all[id] as string);
        } catch (error) {
          return { id, error: (error as Error).message };
        }
      });
  }

  private check(id: string, raw: string): PublishedManifest {
    const where = `${this.keys.current} ${id}`;
    let parsed: ReturnType<typeof PublishedManifestSchema.safeParse>;
    try {
      parsed = PublishedManifestSchema.safeParse(JSON.parse(raw));
    } catch {
      throw tampered(where, 'not JSON');
    }
    if (!parsed.success) throw tampered(where, parsed.error.issues[0]?.message ?? 'invalid record');
    const record = parsed.data;
    if (record.id !== id || record.manifest.id !== id) throw tampered(where, `names id "${record.id}"`);
    const actual = digestOf(record.manifest);
    if (actual !== record.digest) throw tampered(where, `its manifest digests to ${actual}, not ${record.digest}`);
    return record;
  }

  /** The store as the operation layer's lookup of manifests a host does not hold. */
  source(): ManifestSource {
    return {
      find: async (id): Promise<SharedManifest | undefined> => {
        const record = await this.get(id);
        if (!record) return undefined;
        return {
          manifest: record.manifest,
          digest: record.digest,
          source: `published manifest ${id} (${record.digest.slice(0, 19)}…, by ${record.published_by} at ${record.published_at})`,
        };
      },
    };
  }
}

function refusedWrite(key: string, cause: unknown): UhError {
  return new UhError(
    'invalid_input',
    `Redis refused to write ${key} (NOPERM): this user may only read published manifests`,
    {
      hint: 'publish as the producer or api Redis user (docs/deploy.md#redis-acl-users)',
      cause,
    },
  );
}

function tampered(where: string, why: string): UhError {
  return new UhError('internal', `published adapter manifest ${where} fails its digest check: ${why}`, {
    hint: 'publish it again: uh adapter publish <manifest.yaml>',
  });
}
