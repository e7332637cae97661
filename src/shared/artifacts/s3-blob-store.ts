/**
 * Blobs in an S3-compatible bucket (`UH_ARTIFACT_STORE=s3://bucket/prefix`), through the AWS SDK:
 * one object per blob at `<prefix>/sha256/<64 hex>`. Endpoint, region and credentials come from
 * `UH_ARTIFACT_STORE_S3_FILE` (a mounted secret), else the SDK's own chain (instance role, …);
 * they are never written to Redis, a log or an artifact. A blob is written once: an existing key
 * already holds the same bytes (the key is their digest).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { BlobStore } from './artifact-store.js';

export interface S3Location {
  bucket: string;
  /** Key prefix without a trailing slash ('' for the bucket's root). */
  prefix: string;
  endpoint: string | null;
  region: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | null;
}

export class S3BlobStore implements BlobStore {
  readonly description: string;
  private client: Promise<S3Client> | null = null;

  constructor(private readonly location: S3Location) {
    this.description = `s3://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
  }

  private s3(): Promise<S3Client> {
    this.client ??= import('@aws-sdk/client-s3').then(({ S3Client: Client }) => {
      const { endpoint, region, forcePathStyle, credentials } = this.location;
      return new Client({
        region,
        forcePathStyle,
        ...(endpoint ? { endpoint } : {}),
        ...(credentials ? { credentials } : {}),
      });
    });
    return this.client;
  }

  private keyOf(digest: string): string {
    const key = `sha256/${digest.slice('sha256:'.length)}`;
    return this.location.prefix ? `${this.location.prefix}/${key}` : key;
  }

  async put(digest: string, body: Buffer): Promise<void> {
    const { PutObjectCommand, HeadObjectCommand } = await import('@aws-sdk/client-s3');
    const client = await this.s3();
    const Key = this.keyOf(digest);
    try {
      await client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key }));
      return;
    } catch (error) {
      if (!notFound(error)) throw error;
    }
    await client.send(new PutObjectCommand({ Bucket: this.location.bucket, Key, Body: body }));
  }

  async get(digest: string): Promise<Buffer | null> {
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    const client = await this.s3();
    try {
      const reply = await client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: this.keyOf(digest) }));
      return Buffer.from((await reply.Body?.transformToByteArray()) ?? new Uint8Array());
    } catch (error) {
      if (notFound(error)) return null;
      throw error;
    }
  }

  close(): void {
    void this.client?.then((c) => c.destroy());
  }
}

function notFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
}
