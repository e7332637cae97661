/**
 * One git process for both the names and the patch: `git diff-tree --patch-with-raw -z` prints
 * the raw records (`:<mode> <mode> <sha> <sha> <status>\0<path>\0[<path>\0]`, two paths for a
 * rename or copy), one empty field, then the patch. `RawPatchSplit` keeps the raw records (held in
 * memory, like any name list) and passes the patch through to the next stream (a file), hashing
 * and counting it on the way, so the patch never sits in memory.
 */
import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import type { ChangedFile } from '../../shared/contracts/receipt.js';
import { parseNameStatusZ } from './parse-name-status.js';

/** More raw-record bytes than this is not a diff uh can hold: the split fails. */
const MAX_RAW_BYTES = 256 * 1024 * 1024;

export class RawPatchSplit extends Transform {
  /** `status\0path\0[path\0]` per record, the `--name-status -z` shape. */
  private readonly names: string[] = [];
  private pending: Buffer = Buffer.alloc(0);
  private rawBytes = 0;
  /** Paths still expected after the last header (1, or 2 for a rename or copy). */
  private pathsDue = 0;
  private inPatch = false;
  private readonly hash = createHash('sha256');
  /** Patch bytes passed through. */
  bytes = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.inPatch) return done(null, this.pass(chunk));
    this.rawBytes += chunk.length;
    if (this.rawBytes > MAX_RAW_BYTES) return done(new Error('git diff-tree printed more raw records than uh holds'));
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let at = 0;
    for (let nul = this.pending.indexOf(0, at); nul >= 0 && !this.inPatch; nul = this.pending.indexOf(0, at)) {
      this.field(this.pending.subarray(at, nul).toString('utf8'));
      at = nul + 1;
    }
    const rest = this.pending.subarray(at);
    this.pending = this.inPatch ? Buffer.alloc(0) : Buffer.from(rest);
    done(null, this.inPatch && rest.length > 0 ? this.pass(rest) : undefined);
  }

  override _flush(done: TransformCallback): void {
    // Output with no patch part ends on its last NUL; anything else left is not a raw record.
    done();
  }

  private field(text: string): void {
    if (this.pathsDue > 0) {
      this.names.push(text);
      this.pathsDue -= 1;
    } else if (text === '') this.inPatch = true;
    else if (text.startsWith(':')) {
      const status = text.slice(text.lastIndexOf(' ') + 1);
      this.names.push(status);
      this.pathsDue = status.startsWith('R') || status.startsWith('C') ? 2 : 1;
    }
  }

  private pass(chunk: Buffer): Buffer {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    return chunk;
  }

  /** The changed files, sorted by path (after the stream ended). */
  changed(): ChangedFile[] {
    return parseNameStatusZ(this.names.length > 0 ? `${this.names.join('\0')}\0` : '');
  }

  /** `sha256:<hex>` of the patch bytes (after the stream ended). */
  digest(): string {
    return `sha256:${this.hash.digest('hex')}`;
  }
}
