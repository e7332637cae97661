import { closeSync, openSync, writeSync } from 'node:fs';
import type { EventType, UhEvent } from '../../shared/contracts/event.js';
import { redact } from '../../shared/redact.js';

export type EventListener = (event: UhEvent) => void | Promise<void>;

/**
 * The operation's event log: every event is redacted, stamped with `seq` and `at`, written to
 * `events.jsonl` synchronously (a crash loses nothing already appended) and handed to
 * listeners (the live publisher in queue mode).
 */
export class EventLog {
  private fd: number;
  private seq: number;
  private readonly listeners: EventListener[] = [];
  private pending: Promise<unknown> = Promise.resolve();
  secrets: string[] = [];

  constructor(
    readonly path: string,
    readonly operationId: string,
    private readonly now: () => Date,
    startSeq = 0,
  ) {
    this.fd = openSync(path, 'a');
    this.seq = startSeq;
  }

  subscribe(listener: EventListener): void {
    this.listeners.push(listener);
  }

  append(type: EventType, data: Record<string, unknown>): UhEvent {
    const event = this.appendLocal(type, data);
    for (const listener of this.listeners) {
      // Listeners run in order; a failing publisher never loses the event (it is on disk).
      this.pending = this.pending.then(() => listener(event)).catch(() => undefined);
    }
    return event;
  }

  /** Append to `events.jsonl` only: the caller publishes the event itself (the queue's settle script). */
  appendLocal(type: EventType, data: Record<string, unknown>): UhEvent {
    const event: UhEvent = {
      seq: this.seq++,
      at: this.now().toISOString(),
      operation_id: this.operationId,
      type,
      data: redact(data, this.secrets),
    };
    writeSync(this.fd, `${JSON.stringify(event)}\n`);
    return event;
  }

  /** Wait until every listener has seen every event so far. */
  async flush(): Promise<void> {
    await this.pending;
  }

  async close(): Promise<void> {
    await this.flush();
    closeSync(this.fd);
  }
}
