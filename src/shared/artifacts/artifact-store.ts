/**
 * The artifact store: where an operation's bulky, immutable outputs live (receipt, diff, logs,
 * final message, runtime result, mission, the event transcript), so Redis keeps only the record,
 * bounded events and one pointer. Content addressed: a blob's key is its sha256, so a blob is
 * immutable by construction (the same key can only ever hold the same bytes), a reader verifies
 * every byte it gets, and a crash between writing a blob and settling leaves at most an unreferenced
 * blob, never a pointer to nothing (the worker writes blobs first, the record last).
 *
 * An operation's blobs are tied together by a manifest (`uh.artifacts.v0`), itself a blob; the
 * operation record holds the manifest's digest (`artifacts` field). Two implementations:
 * a directory (default; shared by the fleet's hosts as a mounted volume) and S3-compatible.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { UhError } from '../errors.js';

/** Where blobs go: put is idempotent (same digest, same bytes); get returns null when absent. */
export interface BlobStore {
  /** `dir:/path` or `s3://bucket/prefix`: names the store, never its credentials. */
  readonly description: string;
  put(digest: string, body: Buffer): Promise<void>;
  get(digest: string): Promise<Buffer | null>;
}

export const ManifestSchema = z
  .object({
    schema_version: z.literal('uh.artifacts.v0'),
    operation_id: z.string(),
    attempt: z.number().int().positive(),
    files: z.record(z.string(), z.object({ digest: z.string().regex(/^sha256:[0-9a-f]{64}$/), bytes: z.number() })),
  })
  .strict();
export type ArtifactManifest = z.infer<typeof ManifestSchema>;

export const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;

export function blobDigest(body: Buffer): string {
  return `sha256:${createHash('sha256').update(body).digest('hex')}`;
}

/** The store as the operation layer uses it: blobs verified on the way in and out, manifests. */
export class ArtifactStore {
  constructor(readonly blobs: BlobStore) {}

  get description(): string {
    return this.blobs.description;
  }

  /** Write every artifact, then the manifest; resolves with the manifest's digest (the pointer). */
  async putOperation(operationId: string, attempt: number, files: Record<string, string | Buffer>): Promise<string> {
    const manifest: ArtifactManifest = {
      schema_version: 'uh.artifacts.v0',
      operation_id: operationId,
      attempt,
      files: {},
    };
    for (const [name, content] of Object.entries(files)) {
      const body = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
      manifest.files[name] = { digest: await this.putBlob(body), bytes: body.length };
    }
    return this.putBlob(Buffer.from(`${JSON.stringify(manifest)}\n`, 'utf8'));
  }

  async putBlob(body: Buffer): Promise<string> {
    const digest = blobDigest(body);
    await this.blobs.put(digest, body);
    return digest;
  }

  /** A blob by digest, verified: a blob whose bytes do not hash to its key is an error, never returned. */
  async getBlob(digest: string): Promise<Buffer> {
    if (!DIGEST_PATTERN.test(digest)) throw storeError(`not an artifact digest: ${JSON.stringify(digest)}`);
    const body = await this.blobs.get(digest);
    if (!body) throw storeError(`artifact ${digest} is missing from ${this.description}`);
    if (blobDigest(body) !== digest)
      throw storeError(`artifact ${digest} in ${this.description} does not match its digest`);
    return body;
  }

  async manifest(pointer: string): Promise<ArtifactManifest> {
    const parsed = ManifestSchema.safeParse(JSON.parse((await this.getBlob(pointer)).toString('utf8')));
    if (!parsed.success) throw storeError(`artifact manifest ${pointer} is not uh.artifacts.v0`);
    return parsed.data;
  }

  /** Every artifact of a manifest, as text (names → contents); `only` limits the names read. */
  async readAll(pointer: string, only?: readonly string[]): Promise<Record<string, string>> {
    const { files } = await this.manifest(pointer);
    const out: Record<string, string> = {};
    for (const [name, file] of Object.entries(files)) {
      if (only && !only.includes(name)) continue;
      out[name] = (await this.getBlob(file.digest)).toString('utf8');
    }
    return out;
  }
}

function storeError(message: string): UhError {
  return new UhError('internal', message, {
    hint: 'check UH_ARTIFACT_STORE on this host: every host of a fleet must name the same store (docs/deploy.md)',
  });
}
