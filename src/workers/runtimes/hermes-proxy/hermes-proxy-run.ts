/**
 * One exchange with the proxy through the context's `fetch`: POST the completion request, sniff
 * the reply (SSE or JSON), stream assistant text to events and to the runtime log as it
 * arrives, and return what the classifier needs. Never throws for transport problems; they are data.
 *
 * States: requesting → (network error | response) → reading SSE | reading JSON | reading an
 * error body → done. The request timer and the run's signal abort whichever state is current.
 * Each state is a function over one {@link ExchangeContext}.
 */
import { join } from 'node:path';
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import { redactString } from '../../../shared/redact.js';
import { SentinelScanner } from '../../../shared/sentinel.js';
import { abortReasonOf, type RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import type { FetchFunction } from '../../../shared/transport/http-fetch.js';
import { readSseBatches } from '../../../shared/transport/sse.js';
import type { HermesProxyExchange } from './classify-hermes-proxy.js';
import { parseRetryAfterHeader } from '../../../shared/runtime/provider-errors.js';
import { messageEvent, parseFrame, type ChunkFacts } from './hermes-proxy-events.js';
import { TextLog } from './hermes-proxy-log.js';
import { parseErrorEnvelope, type ChatCompletionRequest } from './hermes-proxy-protocol.js';
import type { HermesProxySettings } from './hermes-proxy-settings.js';
import { bodyText, networkErrorOf, requestHeaders, sniffSse } from './hermes-proxy-http.js';

export interface HermesProxyRunInput {
  config: HermesProxySettings;
  body: ChatCompletionRequest;
  /** The run's signal (cancel, mission timeout). */
  signal: AbortSignal;
  logDir: string;
  /** Scrubbed from everything the runner writes or yields. */
  secrets: readonly string[];
  now: () => number;
  /** The runtime context's fetch; the exchange must not reach the network any other way. */
  fetch: FetchFunction;
}

export interface HermesProxyRunResult {
  exchange: HermesProxyExchange;
  sentinel: string | null;
  usage: Usage | undefined;
  responseId: string | undefined;
  logs: string[];
}

const MAX_ERROR_BODY = 64 * 1024;
const MAX_JSON_BODY = 32 * 1024 * 1024;
/** Unparseable frames reported one by one before the rest are only counted. */
const MAX_RAW_REPORTS = 5;

/** What every state of one exchange reads and writes. */
interface ExchangeContext {
  input: HermesProxyRunInput;
  x: HermesProxyExchange;
  scrub: (text: string) => string;
  out: TextLog;
  diag: TextLog;
  scanner: SentinelScanner;
  usage: Usage | undefined;
  responseId: string | undefined;
  /** Aborts the request: by the run's signal or the request timer, whichever fires first. */
  controller: AbortController;
  /** Set once the reply has been read: a cancel or timer firing later changes nothing. */
  settled: boolean;
}

/** Run the exchange, yielding `runtime.message`/`runtime.raw`/`runtime.log` events; returns the facts. */
export async function* runHermesProxyExchange(
  input: HermesProxyRunInput,
): AsyncGenerator<RuntimeEventV1, HermesProxyRunResult> {
  const c = exchangeContext(input);
  const disarm = armAborts(c);
  try {
    const response = await sendRequest(c);
    if (!response) return finish(c);
    const contentType = response.headers.get('content-type') ?? '';
    yield await responseStarted(c, response, contentType);
    if (response.status < 200 || response.status > 299) {
      await readErrorBody(c, response);
      return finish(c);
    }
    const { sse, body } = await sniffSse(bodyOf(response), contentType);
    if (sse) yield* readSse(c, body, contentType);
    else yield* readJson(c, body);
    return finish(c);
  } finally {
    disarm();
    // Releases the connection of a body left unread (an error frame, a break); a no-op once read.
    if (!c.controller.signal.aborted) c.controller.abort();
    await Promise.all([c.out.close(), c.diag.close()]);
  }
}

function exchangeContext(input: HermesProxyRunInput): ExchangeContext {
  const { config, secrets } = input;
  return {
    input,
    x: {
      endpoint: config.endpoint,
      model: config.model,
      provider: config.provider,
      abort: null,
      requestTimedOut: false,
      requestTimeoutMs: config.request_timeout_ms,
      networkError: null,
      httpStatus: null,
      errorEnvelope: null,
      errorBody: null,
      retryAfterMs: null,
      bodyError: null,
      contentChars: 0,
      complete: false,
      finishReason: null,
    },
    scrub: (text: string) => redactString(text, secrets),
    out: new TextLog(join(input.logDir, 'runtime.stdout.log')),
    diag: new TextLog(join(input.logDir, 'runtime.stderr.log')),
    scanner: new SentinelScanner(),
    usage: undefined,
    responseId: undefined,
    controller: new AbortController(),
    settled: false,
  };
}

/** The run's signal and the request timer abort the request; the first wins. Returns the disarm. */
function armAborts(c: ExchangeContext): () => void {
  const { input, controller, x } = c;
  const onAbort = () => {
    if (c.settled || controller.signal.aborted) return; // the first of cancel, timer and completion wins
    x.abort = abortReasonOf(input.signal);
    controller.abort(input.signal.reason);
  };
  if (input.signal.aborted) onAbort();
  else input.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    if (c.settled || controller.signal.aborted) return;
    x.requestTimedOut = true;
    controller.abort(new Error(`request timed out after ${input.config.request_timeout_ms} ms`));
  }, input.config.request_timeout_ms);
  return () => {
    clearTimeout(timer);
    input.signal.removeEventListener('abort', onAbort);
  };
}

/** requesting: the POST; a network error (not an abort) is recorded and yields no response. */
async function sendRequest(c: ExchangeContext): Promise<Response | null> {
  const { config, body } = c.input;
  const url = `${config.endpoint}/chat/completions`;
  await c.diag.write(`POST ${url} model=${config.model} stream=${config.stream}\n`);
  try {
    return await c.input.fetch(url, {
      method: 'POST',
      headers: requestHeaders(config),
      body: JSON.stringify(body),
      signal: c.controller.signal,
      redirect: 'manual', // a redirect is an answer to report, not to follow
    });
  } catch (error) {
    if (!c.controller.signal.aborted) c.x.networkError = scrubbed(networkErrorOf(error), c.scrub);
    return null;
  }
}

async function responseStarted(c: ExchangeContext, response: Response, contentType: string): Promise<RuntimeEventV1> {
  c.x.httpStatus = response.status;
  await c.diag.write(`HTTP ${response.status} ${contentType}\n`);
  return {
    type: 'runtime.log',
    data: { level: 'info', message: `HTTP ${response.status} ${contentType}`.trim(), http_status: response.status },
  };
}

/** reading an error body: the envelope when there is one, else the capped text. */
async function readErrorBody(c: ExchangeContext, response: Response): Promise<void> {
  const { x } = c;
  x.retryAfterMs = parseRetryAfterHeader(response.headers.get('retry-after') ?? undefined, c.input.now());
  const text = c.scrub(await bodyText(bodyOf(response), MAX_ERROR_BODY).catch(() => ''));
  await c.diag.write(`${text}\n`);
  x.errorEnvelope = parseErrorEnvelope(text);
  if (!x.errorEnvelope) x.errorBody = text.slice(0, 2048);
}

/** reading SSE: chunks to text events per network read; an error frame ends the read. */
async function* readSse(
  c: ExchangeContext,
  body: AsyncIterable<Uint8Array>,
  contentType: string,
): AsyncGenerator<RuntimeEventV1> {
  const { x } = c;
  let rawReports = 0;
  let unparsed = 0;
  let frames = 0;
  for await (const batch of readSseBatches(body)) {
    let text = '';
    for (const item of batch) {
      frames += 1;
      if (item.type === 'done') x.complete = true;
      else if (item.type === 'error') {
        if (!c.controller.signal.aborted) x.bodyError = c.scrub(describeError(item.error));
      } else {
        const frame = parseFrame(item.data);
        if (frame.kind === 'chunk') {
          apply(c, frame.facts);
          text += frame.facts.text;
        } else if (frame.kind === 'error') {
          x.errorEnvelope = { ...frame.envelope, message: c.scrub(frame.envelope.message) };
        } else {
          unparsed += 1;
          if (rawReports++ < MAX_RAW_REPORTS)
            yield {
              type: 'runtime.raw',
              data: { source: 'sse', line: c.scrub(item.data.slice(0, 500)), reason: frame.reason },
            };
        }
      }
    }
    if (text !== '') yield await takeText(c, text);
    if (x.errorEnvelope) break;
  }
  c.settled = true;
  if (x.finishReason !== null) x.complete = true;
  // Sniffed as SSE only for want of a JSON start, and not one frame in it: say what it was.
  if (frames === 0 && x.bodyError === null && !/event-stream/i.test(contentType)) {
    x.bodyError = `the reply is neither SSE nor JSON (content-type ${contentType || 'none'})`;
  }
  if (unparsed > MAX_RAW_REPORTS)
    yield {
      type: 'runtime.log',
      data: {
        level: 'warn',
        message: `${unparsed} SSE frames were not completion chunks (first ${MAX_RAW_REPORTS} reported)`,
      },
    };
}

/** reading JSON: one whole completion (or an error envelope), capped. */
async function* readJson(c: ExchangeContext, body: AsyncIterable<Uint8Array>): AsyncGenerator<RuntimeEventV1> {
  const { x } = c;
  let text: string;
  try {
    text = await bodyText(body, MAX_JSON_BODY, true);
  } catch (error) {
    if (!c.controller.signal.aborted) x.bodyError = c.scrub(describeError(error));
    return;
  }
  const frame = parseFrame(text, true);
  if (frame.kind === 'chunk') {
    apply(c, frame.facts);
    x.complete = true;
    if (frame.facts.text !== '') yield await takeText(c, frame.facts.text);
  } else if (frame.kind === 'error') x.errorEnvelope = { ...frame.envelope, message: c.scrub(frame.envelope.message) };
  else x.bodyError = `the reply is neither SSE nor a chat completion (${frame.reason}): ${c.scrub(text.slice(0, 200))}`;
}

function apply(c: ExchangeContext, facts: ChunkFacts): void {
  if (facts.finishReason) c.x.finishReason = facts.finishReason;
  if (facts.usage) c.usage = facts.usage;
  c.responseId ??= facts.id;
}

/** Count, scan and log a piece of assistant text; returns its event (scrubbed). */
async function takeText(c: ExchangeContext, text: string): Promise<RuntimeEventV1> {
  c.x.contentChars += text.length;
  const clean = c.scrub(text);
  c.scanner.push(clean);
  const pending = c.out.write(clean);
  if (pending) await pending;
  return messageEvent(clean);
}

function finish(c: ExchangeContext): HermesProxyRunResult {
  c.settled = true;
  const sentinel = c.scanner.result();
  // Scrubbed again whole: a secret split across two network reads escapes the per-chunk scrub.
  return {
    exchange: c.x,
    sentinel: sentinel === null ? null : c.scrub(sentinel),
    usage: c.usage,
    responseId: c.responseId,
    logs: [c.out.path, c.diag.path],
  };
}

/** A fetch body as bytes; no body reads as empty. */
function bodyOf(response: Response): AsyncIterable<Uint8Array> {
  return (response.body ?? (async function* () {})()) as AsyncIterable<Uint8Array>;
}

function describeError(error: unknown): string {
  const net = networkErrorOf(error);
  return net.code ? `${net.code}: ${net.message}` : net.message;
}

function scrubbed(net: { code: string | null; message: string }, scrub: (t: string) => string) {
  return { code: net.code, message: scrub(net.message) };
}
