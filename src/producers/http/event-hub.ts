/**
 * Live events for SSE clients: ONE Redis reader per operation, shared by all of its clients,
 * and a cap on clients overall. Each SSE event's id is the Redis stream entry id (unique,
 * ordered), so a client resumes from `Last-Event-ID` with nothing skipped or repeated: it reads
 * its backlog with XRANGE on the shared connection, then takes the live fan-out, dropping
 * anything at or below what it already sent.
 */
import type { Redis } from 'ioredis';
import { EventSchema, type UhEvent } from '../../shared/contracts/event.js';
import type { OperationStore, QueueRecord } from '../../shared/queue/operation-store.js';

export interface StreamEntry {
  id: string;
  event: UhEvent | null;
}
export interface Subscriber {
  onEntry(entry: StreamEntry): void;
  onSettled(record: QueueRecord): void;
}

type XReadReply = Array<[string, Array<[string, string[]]>]> | null;
const SETTLED = new Set(['finished', 'unknown']);

export function parseFields(id: string, fields: string[]): StreamEntry {
  const i = fields.indexOf('event');
  if (i < 0) return { id, event: null };
  try {
    const parsed = EventSchema.safeParse(JSON.parse(fields[i + 1] ?? 'null'));
    return { id, event: parsed.success ? parsed.data : null };
  } catch {
    return { id, event: null };
  }
}

/** Stream ids `ms-seq` in order; a malformed id compares as the lowest. */
export function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am !== bm ? am - bm : as - bs;
}
export const STREAM_ID = /^\d{1,20}-\d{1,20}$/;

class OperationTail {
  readonly subscribers = new Set<Subscriber>();
  stopped = false;
  constructor(
    private readonly store: OperationStore,
    private readonly reader: Redis,
    private readonly id: string,
    private readonly onEnd: () => void,
  ) {}

  async run(): Promise<void> {
    const key = this.store.keys.events(this.id);
    let last = (await this.store.redis.xrevrange(key, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    const drain = async (block: number | null) => {
      const args: (string | number)[] = [
        'COUNT',
        500,
        ...(block === null ? [] : ['BLOCK', block]),
        'STREAMS',
        key,
        last,
      ];
      const reply = (await (this.reader.xread as (...a: (string | number)[]) => Promise<XReadReply>)(...args)) ?? [];
      for (const [, entries] of reply) {
        for (const [entryId, fields] of entries) {
          last = entryId;
          const entry = parseFields(entryId, fields);
          for (const s of this.subscribers) s.onEntry(entry);
        }
      }
    };
    try {
      while (!this.stopped && this.subscribers.size > 0) {
        const record = await this.store.get(this.id);
        if (record && SETTLED.has(record.state)) {
          for (let before = ''; before !== last;) {
            before = last;
            await drain(null);
          }
          for (const s of this.subscribers) s.onSettled(record);
          return;
        }
        await drain(500);
      }
    } finally {
      this.stop();
      this.onEnd();
    }
  }

  stop(): void {
    if (!this.stopped) {
      this.stopped = true;
      this.reader.disconnect();
    }
  }
}

export class EventHub {
  private readonly tails = new Map<string, OperationTail>();
  private clients = 0;

  constructor(
    private readonly store: OperationStore,
    readonly maxClients: number,
    private readonly connectionName: string,
  ) {}

  get openClients(): number {
    return this.clients;
  }
  get openTails(): number {
    return this.tails.size;
  }

  /** Stop every tail (server shutdown); their clients' sockets are closed by the server. */
  close(): void {
    for (const tail of this.tails.values()) tail.stop();
    this.tails.clear();
  }

  /** Reserve a client slot; false when the cap is reached. */
  reserve(): boolean {
    if (this.clients >= this.maxClients) return false;
    this.clients += 1;
    return true;
  }
  release(): void {
    this.clients = Math.max(0, this.clients - 1);
  }

  /** Join the operation's shared tail (started on first use); returns the leave function. */
  join(operationId: string, subscriber: Subscriber): () => void {
    let tail = this.tails.get(operationId);
    if (!tail) {
      const reader = this.store.redis.duplicate({ connectionName: this.connectionName });
      reader.on('error', () => undefined);
      const created = new OperationTail(this.store, reader, operationId, () => {
        if (this.tails.get(operationId) === created) this.tails.delete(operationId);
      });
      tail = created;
      this.tails.set(operationId, created);
      created.subscribers.add(subscriber);
      void created.run().catch(() => undefined);
    } else tail.subscribers.add(subscriber);
    const joined = tail;
    return () => void joined.subscribers.delete(subscriber);
  }

  /**
   * Entries after `afterId` (exclusive) up to now, on the shared connection; once retention trimmed a
   * settled operation's stream, its transcript from the artifact store, numbered `0-1`, `0-2`, ….
   */
  async backlog(operationId: string, afterId: string): Promise<StreamEntry[]> {
    if ((await this.store.redis.exists(this.store.keys.events(operationId))) === 0) {
      const lines = await this.store.eventLines(operationId);
      return lines
        .map((line, i) => parseFields(`0-${i + 1}`, ['event', line]))
        .filter((e) => compareIds(e.id, afterId) > 0);
    }
    const out: StreamEntry[] = [];
    let from = afterId === '0-0' ? '-' : `(${afterId}`;
    for (;;) {
      const page = await this.store.redis.xrange(this.store.keys.events(operationId), from, '+', 'COUNT', 1000);
      for (const [id, fields] of page) out.push(parseFields(id, fields));
      if (page.length < 1000) return out;
      from = `(${page[page.length - 1]?.[0] ?? ''}`;
    }
  }
}
