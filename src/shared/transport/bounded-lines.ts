/**
 * Split a byte stream into lines with a cap on line length, so memory stays bounded whatever a
 * child prints. A line longer than the cap is reported once as `overflow` with a short preview;
 * the rest of it is dropped up to the next newline. Bytes are split before decoding, so a
 * multi-byte character cut across chunks is never mangled; CR before LF and blank lines are
 * dropped. Pure state, no I/O. Used by the CLI JSONL and the JSON-RPC NDJSON transports.
 */
export type BoundedLine = { kind: 'line'; text: string } | { kind: 'overflow'; preview: string; bytes: number };

const PREVIEW_BYTES = 512;

export class BoundedLineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  /** Bytes seen of the current over-long line; 0 when the current line is within the cap. */
  private overflowBytes = 0;
  private overflowPreview = '';

  /** @param maxLineBytes longest line kept whole; longer lines become `overflow` items. */
  constructor(private readonly maxLineBytes: number) {}

  /** Feed a chunk; returns the lines it completed, in order. */
  push(input: Buffer | Uint8Array | string): BoundedLine[] {
    const chunk =
      typeof input === 'string'
        ? Buffer.from(input, 'utf8')
        : Buffer.isBuffer(input)
          ? input
          : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
    const out: BoundedLine[] = [];
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      this.append(chunk.subarray(start, end));
      if (nl === -1) break;
      const line = this.take();
      if (line) out.push(line);
      start = nl + 1;
    }
    return out;
  }

  /** The unterminated last line, if any (call once at end of stream). */
  end(): BoundedLine[] {
    const line = this.take();
    return line ? [line] : [];
  }

  private append(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (this.overflowBytes > 0) {
      this.overflowBytes += bytes.length;
      return;
    }
    if (this.size + bytes.length > this.maxLineBytes) {
      const head = Buffer.concat([...this.parts, bytes.subarray(0, PREVIEW_BYTES)]).subarray(0, PREVIEW_BYTES);
      this.overflowPreview = head.toString('utf8');
      this.overflowBytes = this.size + bytes.length;
      this.parts = [];
      this.size = 0;
      return;
    }
    this.parts.push(Buffer.from(bytes)); // copy: the caller may reuse its chunk
    this.size += bytes.length;
  }

  private take(): BoundedLine | null {
    if (this.overflowBytes > 0) {
      const item: BoundedLine = { kind: 'overflow', preview: this.overflowPreview, bytes: this.overflowBytes };
      this.overflowBytes = 0;
      this.overflowPreview = '';
      return item;
    }
    if (this.size === 0 && this.parts.length === 0) return null;
    let text = Buffer.concat(this.parts, this.size).toString('utf8');
    this.parts = [];
    this.size = 0;
    if (text.endsWith('\r')) text = text.slice(0, -1);
    if (text.trim() === '') return null; // blank lines carry nothing in NDJSON or JSONL
    return { kind: 'line', text };
  }
}

/** Keeps the last `maxBytes` of a stream (for `exited with code N: <stderr tail>`). */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(Buffer.from(chunk));
    this.size += chunk.length;
    while (this.size - (this.chunks[0]?.length ?? 0) >= this.maxBytes && this.chunks.length > 1) {
      this.size -= this.chunks.shift()!.length;
    }
  }

  /** The tail as text, trimmed; cut at the front to at most `maxBytes`. */
  text(): string {
    const all = Buffer.concat(this.chunks, this.size);
    const cut = all.length > this.maxBytes ? all.subarray(all.length - this.maxBytes) : all;
    return cut
      .toString('utf8')
      .replace(/^\uFFFD+/, '')
      .trim();
  }
}
