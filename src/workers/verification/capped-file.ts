import { closeSync, openSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';

export const TRUNCATION_MARKER = (kept: number, total: number) =>
  `\n[… uh truncated this output: kept the first ${kept} of ${total} bytes …]\n`;

/**
 * A log file that keeps at most `capBytes` of what is written to it, then a truncation
 * marker; it digests exactly what it kept. Memory stays flat: writes go straight to the fd.
 */
export class CappedFile {
  private fd: number;
  private kept = 0;
  private total = 0;
  private hash = createHash('sha256');

  constructor(
    readonly path: string,
    private readonly capBytes: number,
  ) {
    this.fd = openSync(path, 'w');
  }

  write(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.capBytes - this.kept;
    if (room <= 0) return;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    writeSync(this.fd, part);
    this.hash.update(part);
    this.kept += part.length;
  }

  close(): { bytes: number; truncated: boolean; digest: string } {
    const truncated = this.total > this.kept;
    if (truncated) {
      const marker = Buffer.from(TRUNCATION_MARKER(this.kept, this.total));
      writeSync(this.fd, marker);
      this.hash.update(marker);
    }
    closeSync(this.fd);
    return { bytes: this.total, truncated, digest: `sha256:${this.hash.digest('hex')}` };
  }
}
