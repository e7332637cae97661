/**
 * `diff.patch` under the host's size cap (`UH_DIFF_CAP_BYTES`, default 50 MiB): the first
 * `capBytes` of the patch, then, when more was printed, one marker line naming what was kept and
 * the total. Never silently partial: the capture reports `truncated` and the total, the receipt
 * records them (`diff.truncated`, `diff.bytes_total`), and promotion refuses a truncated diff
 * (src/promotion/promotion-policy.ts). The names of the change are not capped with it: they come
 * from git's raw records, before the patch, so the scope check always sees every path.
 *
 * Memory stays flat: chunks go straight to the file; past the cap they are only counted. The
 * digest covers the file as written (kept bytes and marker), so it still proves the artifact.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';

export const PATCH_TRUNCATION_MARKER = (kept: number, total: number) =>
  `\n[… uh truncated this diff at UH_DIFF_CAP_BYTES: kept the first ${kept} of ${total} bytes; the receipt says diff.truncated …]\n`;

/** What was written: `bytes` and `digest` of the file; `bytesTotal` of the whole patch. */
export interface PatchFacts {
  bytes: number;
  digest: string;
  truncated: boolean;
  bytesTotal: number;
}

/** The patch file under its cap: `write` each chunk, then `close` once. Synchronous, like `CappedFile`. */
export class CappedPatchFile {
  private fd: number | null;
  private kept = 0;
  private total = 0;
  private written = 0;
  private readonly hash = createHash('sha256');

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
    this.put(part);
    this.kept += part.length;
  }

  close(): PatchFacts {
    const truncated = this.total > this.kept;
    if (truncated) this.put(Buffer.from(PATCH_TRUNCATION_MARKER(this.kept, this.total)));
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

/** A stream's end into a capped patch file; `facts` resolves once the stream finished. */
export function cappedPatchStream(file: CappedPatchFile): { stream: Writable; facts: () => PatchFacts } {
  let facts: PatchFacts | null = null;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        file.write(chunk);
        done();
      } catch (error) {
        done(error as Error);
      }
    },
    final(done) {
      try {
        facts = file.close();
        done();
      } catch (error) {
        done(error as Error);
      }
    },
    destroy(error, done) {
      file.release();
      done(error);
    },
  });
  return {
    stream,
    facts: () => {
      if (facts === null) throw new Error('the patch is not finished');
      return facts;
    },
  };
}

/** A patch made in process, written under the same cap. */
export function writeCappedPatch(path: string, patch: Buffer, capBytes: number): PatchFacts {
  const file = new CappedPatchFile(path, capBytes);
  file.write(patch);
  return file.close();
}
