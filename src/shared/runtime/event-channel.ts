/**
 * An unbounded single-consumer channel that turns callback-driven producers (notifications from a
 * child, permission requests) into an async iterable for an adapter's `events` stream.
 * `push` after `close` is ignored, so a late callback can never emit after the terminal event.
 */
export class EventChannel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: ((result: IteratorResult<T>) => void) | null = null;
  private closed = false;

  push(item: T): void {
    if (this.closed) return;
    if (this.waiter) {
      const wake = this.waiter;
      this.waiter = null;
      wake({ value: item, done: false });
      return;
    }
    this.items.push(item);
  }

  /** No more items after those already pushed. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.waiter && this.items.length === 0) {
      const wake = this.waiter;
      this.waiter = null;
      wake({ value: undefined, done: true });
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.items.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.waiter = resolve));
      },
      return: () => {
        this.close();
        this.items.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
