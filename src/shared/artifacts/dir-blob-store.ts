/**
 * Blobs in a directory (`UH_ARTIFACT_STORE=dir:/path`, the default: `<cache>/artifacts`): one
 * file per blob at `sha256/<2 hex>/<64 hex>`, written to a temp file beside it and linked into
 * place, so a blob is whole or absent and never rewritten. Share the directory between the
 * fleet's hosts (NFS, a mounted volume) for every host to read every operation's artifacts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDir } from '../fs/make-dir.js';
import type { BlobStore } from './artifact-store.js';

export class DirBlobStore implements BlobStore {
  readonly description: string;

  constructor(readonly root: string) {
    this.description = `dir:${root}`;
  }

  private pathOf(digest: string): string {
    const hex = digest.slice('sha256:'.length);
    return join(this.root, 'sha256', hex.slice(0, 2), hex);
  }

  async put(digest: string, body: Buffer): Promise<void> {
    const path = this.pathOf(digest);
    if (existsSync(path)) return;
    makeDir(join(path, '..'));
    const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(temp, body, { mode: 0o644, flush: true });
    try {
      linkSync(temp, path);
    } catch (error) {
      // Another host wrote the same blob first: same digest, same bytes.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(temp, { force: true });
    }
  }

  async get(digest: string): Promise<Buffer | null> {
    try {
      return readFileSync(this.pathOf(digest));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }
}
