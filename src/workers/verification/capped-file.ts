import { closeSync, openSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';

export const TRUNCATION_MARKER = (kept: number, total: number) =>
  `\n[… uh truncated this output: kept the first ${kept} of ${total} bytes …]\n`;

/** What a capped file holds: `bytes` and `digest` of the file as written; `bytesTotal` of all that came. */
export interface CappedFacts {
  bytes: number;
  digest: string;
  truncated: boolean;
  bytesTotal: number;
}

/**
 * A file that keeps at most `capBytes` of what is written to it, then, when more came, one marker
 * line (`marker(kept, total)`); it digests exactly what it wrote. Memory stays flat: writes go
 * straight to the fd, and past the cap chunks are only counted. `write` each chunk, then `close`
 * once (or `release` on failure). Check logs and `diff.patch` (capped-patch.ts) use it.
 */
export class CappedFile {
  private fd: number | null;
  private kept = 0;
  private total = 0;
  private written = 0;
  private readonly hash = createHash('sha256');

  constructor(
    readonly path: string,
    private readonly capBytes: number,
    private readonly marker: (kept: number, total: number) => string = TRUNCATION_MARKER,
  ) {
    this.fd = openSync(path, 'w');
  }

  write(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.capBytes - this.kept;
    if (room <= 0) return;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.put(part);
    this.kept += part.length;
  }

  close(): CappedFacts {
    const truncated = this.total > this.kept;
    if (truncated) this.put(Buffer.from(this.marker(this.kept, this.total)));
    this.release();
    return { bytes: this.written, digest: `sha256:${this.hash.digest('hex')}`, truncated, bytesTotal: this.total };
  }

  /** Close the file without facts (a failed capture). */
  release(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private put(bytes: Buffer): void {
    if (this.fd === null) throw new Error(`${this.path} is closed`);
    for (let at = 0; at < bytes.length;) at += writeSync(this.fd, bytes, at);
    this.hash.update(bytes);
    this.written += bytes.length;
  }
}
