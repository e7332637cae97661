import { createWriteStream, type WriteStream } from 'node:fs';

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
    // 1 MiB of slack: a full buffer makes the reader wait for the disk on every network read.
    this.stream = createWriteStream(path, { flags: 'a', highWaterMark: 1024 * 1024 });
    this.stream.on('error', (error) => {
      this.error ??= error;
    });
  }

  /**
   * Append `text`. Returns undefined when the buffer has room, else a promise that resolves when
   * it has drained: the caller must await it before writing more (that is what bounds memory).
   */
  write(text: string): Promise<void> | undefined {
    if (this.error || text === '') return undefined;
    return this.stream.write(text) ? undefined : this.drained();
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.stream.off('drain', done);
        this.stream.off('close', done);
        resolve();
      };
      this.stream.on('drain', done);
      this.stream.on('close', done);
    });
  }

  /** Flush and close; idempotent. */
  async close(): Promise<void> {
    if (this.stream.closed || this.stream.destroyed) return;
    await new Promise<void>((resolve) => this.stream.end(() => resolve()));
  }
}
