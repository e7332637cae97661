/**
 * Follow an operation's live event stream (`<p>:op:<op>:events`) until its record settles.
 * The record, not a particular event, decides the end: a rate-limit retry appends a second
 * `operation.completed` and goes on, a re-delivered job ends with `operation.unknown`.
 */
import type { Redis } from 'ioredis';
import { EventSchema, type UhEvent } from '../contracts/event.js';
import type { OperationStore, QueueRecord } from './operation-store.js';

export interface TailOptions {
  /** `start`: every event so far, then live; `now`: only events appended from now on. */
  from: 'start' | 'now';
  onEvent?: (event: UhEvent) => void;
  /** Give up after this long (resolves null); default: wait forever. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const SETTLED = new Set(['finished', 'unknown']);

type XReadReply = Array<[string, Array<[string, string[]]>]> | null;

function parseEntry(fields: string[]): UhEvent | null {
  const i = fields.indexOf('event');
  if (i < 0) return null;
  const parsed = EventSchema.safeParse(JSON.parse(fields[i + 1] ?? 'null'));
  return parsed.success ? parsed.data : null;
}

/**
 * Tail the stream on a dedicated connection (XREAD BLOCK holds it). Resolves with the settled
 * record after every event before the settlement was delivered, or null on timeout/abort.
 */
export async function tailOperation(
  store: OperationStore,
  operationId: string,
  options: TailOptions,
): Promise<QueueRecord | null> {
  const key = store.keys.events(operationId);
  const reader: Redis = store.redis.duplicate();
  reader.on('error', () => undefined);
  const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
  try {
    let last = '0-0';
    if (options.from === 'now') {
      const newest = await store.redis.xrevrange(key, '+', '-', 'COUNT', 1);
      last = newest[0]?.[0] ?? '0-0';
    }
    const drain = async (block: number | null): Promise<void> => {
      const args: (string | number)[] = ['COUNT', 500];
      if (block !== null) args.push('BLOCK', block);
      const reply =
        (await (reader.xread as (...a: (string | number)[]) => Promise<XReadReply>)(...args, 'STREAMS', key, last)) ??
        [];
      for (const [, entries] of reply) {
        for (const [id, fields] of entries) {
          last = id;
          const event = parseEntry(fields);
          if (event) options.onEvent?.(event);
        }
      }
    };
    for (;;) {
      if (options.signal?.aborted) return null;
      const record = await store.get(operationId);
      if (record && SETTLED.has(record.state)) {
        // Trimmed by retention: the transcript in the artifact store is every event.
        if (options.from === 'start' && last === '0-0' && (await store.redis.exists(key)) === 0) {
          for (const line of await store.eventLines(operationId)) {
            const event = parseEntry(['event', line]);
            if (event) options.onEvent?.(event);
          }
          return record;
        }
        // Everything appended before the settlement, then stop.
        for (let before = ''; before !== last;) {
          before = last;
          await drain(null);
        }
        return record;
      }
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await drain(Math.max(1, Math.min(500, left)));
    }
  } finally {
    reader.disconnect();
  }
}
