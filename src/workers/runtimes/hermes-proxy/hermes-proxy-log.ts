import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';

/**
 * An append-only text log on disk whose writer waits for the disk when the stream's buffer is
 * full, so memory stays bounded however fast the network delivers. Never throws: a log that
 * cannot be written is reported once through `error` and the run goes on.
 */
export class TextLog {
  readonly path: string;
  private readonly stream: WriteStream;
  error: Error | null = null;

  constructor(path: string) {
    this.path = path;
    this.stream = createWriteStream(path, { flags: 'a' });
    this.stream.on('error', (error) => {
      this.error ??= error;
    });
  }

  /** Append `text`; resolves at once unless the buffer is full, then when it has drained. */
  async write(text: string): Promise<void> {
    if (this.error || text === '') return;
    if (!this.stream.write(text)) {
      await Promise.race([once(this.stream, 'drain'), once(this.stream, 'close')]).catch(() => undefined);
    }
  }

  /** Flush and close; idempotent. */
  async close(): Promise<void> {
    if (this.stream.closed || this.stream.destroyed) return;
    await new Promise<void>((resolve) => this.stream.end(() => resolve()));
  }
}
