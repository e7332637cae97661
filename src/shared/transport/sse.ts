/**
 * The one Server-Sent Events reader: bytes → UTF-8 text (split multi-byte characters held over)
 * → eventsource-parser@3 → parsed items. It never throws: a broken transport or a parser limit
 * becomes an `error` item and the stream ends. Comments and keep-alives are skipped, multi-line
 * `data:` is joined with `\n`, frames split across chunks are reassembled, an event cut off by
 * the end of the stream is dropped (as the SSE spec says), and the OpenAI-style `data: [DONE]`
 * sentinel becomes a `done` item after which reading stops.
 *
 * eventsource-parser is imported lazily so modules that merely mention SSE stay cheap to load.
 */

/** One parsed item from an SSE body. */
export type SseItem =
  /** A dispatched event: `data` is the joined `data:` lines; `event` and `id` when the frame set them. */
  | { readonly type: 'event'; readonly data: string; readonly event?: string; readonly id?: string }
  /** The `data: [DONE]` sentinel (or the configured one) arrived; nothing is read after it. */
  | { readonly type: 'done' }
  /**
   * The body broke (`phase: 'transport'`: socket reset, abort) or the parser gave up
   * (`phase: 'parse'`: a line longer than `maxBufferChars`). Always the last item.
   */
  | { readonly type: 'error'; readonly phase: 'transport' | 'parse'; readonly error: unknown };

export interface SseOptions {
  /** Data value that ends the stream; `null` disables it. Default `[DONE]`. */
  readonly doneData?: string | null;
  /** Largest pending line or event, in characters, before the reader gives up. Default 8 MiB. */
  readonly maxBufferChars?: number;
  /** Called for each `: comment` line (keep-alives); for diagnostics only. */
  readonly onComment?: (comment: string) => void;
}

/** Default cap on one pending SSE line or event: keeps memory bounded on a frame that never ends. */
export const SSE_MAX_BUFFER_CHARS = 8 * 1024 * 1024;

/**
 * Parse an SSE body, yielding the items found in each chunk read as one batch (so a consumer
 * can coalesce the text of one network read into one downstream event). Batches are never empty.
 * Must be fully iterated or returned early; returning early stops reading the body.
 */
export async function* readSseBatches(
  body: AsyncIterable<Uint8Array | string>,
  options: SseOptions = {},
): AsyncGenerator<SseItem[], void, undefined> {
  const doneData = options.doneData === undefined ? '[DONE]' : options.doneData;
  const { createParser } = await import('eventsource-parser');
  let batch: SseItem[] = [];
  let done = false;
  let parseError: unknown = null;
  const parser = createParser({
    maxBufferSize: options.maxBufferChars ?? SSE_MAX_BUFFER_CHARS,
    onEvent(message) {
      if (done) return;
      if (doneData !== null && message.data === doneData) {
        done = true;
        batch.push({ type: 'done' });
        return;
      }
      const item: { type: 'event'; data: string; event?: string; id?: string } = { type: 'event', data: message.data };
      if (message.event !== undefined) item.event = message.event;
      if (message.id !== undefined) item.id = message.id;
      batch.push(item);
    },
    onError(error) {
      // Unknown fields and bad `retry:` values are tolerated; only a blown buffer is fatal.
      if (error.type === 'max-buffer-size-exceeded') parseError = error;
    },
    ...(options.onComment ? { onComment: options.onComment } : {}),
  });
  const decoder = new TextDecoder('utf-8');
  const iterator = body[Symbol.asyncIterator]();
  try {
    while (!done) {
      let next: IteratorResult<Uint8Array | string>;
      try {
        next = await iterator.next();
      } catch (error) {
        if (batch.length > 0) yield flush();
        yield [{ type: 'error', phase: 'transport', error }];
        return;
      }
      if (next.done) {
        parser.feed(decoder.decode()); // an event not closed by a blank line is dropped, as the SSE spec says
        if (batch.length > 0) yield flush();
        return;
      }
      const chunk = next.value;
      parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
      if (parseError !== null) {
        batch.push({ type: 'error', phase: 'parse', error: parseError });
        yield flush();
        return;
      }
      if (batch.length > 0) yield flush();
    }
  } finally {
    // Stops the body after `[DONE]`, an error or an early return by the consumer.
    try {
      await iterator.return?.();
    } catch {
      // the body is already broken; nothing more to release
    }
  }

  function flush(): SseItem[] {
    const out = batch;
    batch = [];
    return out;
  }
}

/** `readSseBatches` flattened: one item at a time. Never throws. */
export async function* readSse(
  body: AsyncIterable<Uint8Array | string>,
  options: SseOptions = {},
): AsyncGenerator<SseItem, void, undefined> {
  for await (const batch of readSseBatches(body, options)) yield* batch;
}
