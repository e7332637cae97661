/**
 * Splits a byte stream into newline-delimited lines (NDJSON framing). Bytes are split on `\n`
 * before decoding, so a multi-byte character cut across chunks is never mangled; a trailing `\r`
 * is dropped; empty lines are skipped. A line longer than `maxLineBytes` is never buffered whole:
 * its bytes are discarded as they arrive and it is reported once, as `oversized`, when it ends.
 * Memory is bounded by `maxLineBytes` whatever the peer prints.
 */
export type SplitLine = { kind: 'line'; text: string } | { kind: 'oversized'; bytes: number; head: string };

/** Default cap on one line: generous for big tool outputs, small enough to bound memory. */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;

export class NdjsonLineSplitter {
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes of the current line already dropped because it is oversized (0 when not dropping). */
  private dropped = 0;
  private droppedHead = '';
  private readonly decoder = new TextDecoder();

  constructor(private readonly maxLineBytes: number = DEFAULT_MAX_LINE_BYTES) {}

  /** Feed bytes; returns the lines completed by them, in order. */
  push(chunk: Buffer | Uint8Array | string): SplitLine[] {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: SplitLine[] = [];
    for (;;) {
      const nl = buf.indexOf(0x0a);
      if (nl === -1) {
        this.append(buf);
        return out;
      }
      this.append(buf.subarray(0, nl));
      const line = this.take();
      if (line) out.push(line);
      buf = buf.subarray(nl + 1);
    }
  }

  /** The last line when the stream ends without a newline, or null. */
  end(): SplitLine | null {
    return this.take();
  }

  private append(part: Buffer): void {
    if (part.length === 0) return;
    if (this.dropped > 0) {
      this.dropped += part.length;
      return;
    }
    if (this.buffered + part.length > this.maxLineBytes) {
      const all = Buffer.concat([...this.chunks, part]);
      this.droppedHead = this.decoder.decode(all.subarray(0, 200));
      this.dropped = all.length;
      this.chunks = [];
      this.buffered = 0;
      return;
    }
    // Copy: the caller may reuse its buffer.
    this.chunks.push(Buffer.from(part));
    this.buffered += part.length;
  }

  private take(): SplitLine | null {
    if (this.dropped > 0) {
      const line: SplitLine = { kind: 'oversized', bytes: this.dropped, head: this.droppedHead };
      this.dropped = 0;
      this.droppedHead = '';
      return line;
    }
    if (this.buffered === 0) return null;
    let text = this.decoder.decode(Buffer.concat(this.chunks));
    this.chunks = [];
    this.buffered = 0;
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return null;
    return { kind: 'line', text };
  }
}
