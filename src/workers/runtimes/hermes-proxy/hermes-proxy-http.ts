/** Small HTTP helpers of the hermes-proxy runner and check: headers, error codes, bodies, sniffing. */
import type { HermesProxySettings } from './hermes-proxy-settings.js';

/** Request headers: extra headers first, then the adapter's own (which they cannot override). */
export function requestHeaders(
  config: HermesProxySettings,
  accept = config.stream ? 'text/event-stream, application/json' : 'application/json',
): Record<string, string> {
  return {
    ...config.extra_headers,
    authorization: `Bearer ${config.auth_token}`,
    'content-type': 'application/json',
    accept,
  };
}

/**
 * The socket-level code of a failed request (`ECONNREFUSED`, `UND_ERR_SOCKET`…), looked up on the
 * error, its `cause` chain and an AggregateError's members (happy eyeballs), plus a message.
 */
export function networkErrorOf(error: unknown): { code: string | null; message: string } {
  const seen = new Set<unknown>();
  let code: string | null = null;
  let message = '';
  const visit = (e: unknown, depth: number) => {
    if (depth > 5 || e === null || typeof e !== 'object' || seen.has(e)) return;
    seen.add(e);
    const rec = e as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (code === null && typeof rec.code === 'string') code = rec.code;
    if (message === '' && typeof rec.message === 'string' && rec.message !== '' && rec.message !== 'fetch failed')
      message = rec.message;
    visit(rec.cause, depth + 1);
    if (Array.isArray(rec.errors)) for (const inner of rec.errors) visit(inner, depth + 1);
  };
  visit(error, 0);
  return { code, message: message || code || String(error) };
}

/**
 * Read a body as text, at most `cap` bytes. Past the cap: throw when `strict`, else stop and
 * return what was read. Memory is bounded by `cap`.
 */
export async function bodyText(body: AsyncIterable<Uint8Array>, cap: number, strict = false): Promise<string> {
  const decoder = new TextDecoder();
  let size = 0;
  let text = '';
  for await (const chunk of body) {
    if (size + chunk.byteLength > cap) {
      if (strict) throw new Error(`reply body larger than ${cap} bytes`);
      text += decoder.decode(chunk.subarray(0, cap - size));
      return text;
    }
    size += chunk.byteLength;
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * Is this 2xx reply SSE? By content type when it says so; otherwise by its first byte
 * (`{` or `[` is JSON, anything else SSE). Returns a body that still yields every byte.
 */
export async function sniffSse(
  body: AsyncIterable<Uint8Array>,
  contentType: string,
): Promise<{ sse: boolean; body: AsyncIterable<Uint8Array> }> {
  const ct = contentType.toLowerCase();
  if (ct.includes('text/event-stream')) return { sse: true, body };
  if (ct.includes('json')) return { sse: false, body };
  const iterator = body[Symbol.asyncIterator]();
  let first: IteratorResult<Uint8Array>;
  try {
    first = await iterator.next();
  } catch (error) {
    return { sse: false, body: failing(error) };
  }
  const head = first.done ? '' : new TextDecoder().decode(first.value.subarray(0, 64)).trimStart();
  return { sse: !(head.startsWith('{') || head.startsWith('[')), body: prepend(first, iterator) };
}

async function* prepend(
  first: IteratorResult<Uint8Array>,
  iterator: AsyncIterator<Uint8Array>,
): AsyncGenerator<Uint8Array> {
  try {
    if (first.done) return;
    yield first.value;
    while (true) {
      const next = await iterator.next();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await iterator.return?.();
  }
}

// eslint-disable-next-line require-yield
async function* failing(error: unknown): AsyncGenerator<Uint8Array> {
  throw error;
}
