/**
 * One exchange with the proxy over undici: POST the completion request, sniff the reply
 * (SSE or JSON), stream assistant text to events and to the runtime log as it arrives, and
 * return what the classifier needs. Never throws for transport problems; they are data.
 *
 * States: requesting → (network error | response) → reading SSE | reading JSON | reading an
 * error body → done. The request timer and the run's signal abort whichever state is current.
 */
import { join } from 'node:path';
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import { redactString } from '../../../shared/redact.js';
import { SentinelScanner } from '../../../shared/sentinel.js';
import { abortReasonOf, type RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { readSseBatches } from '../../../shared/transport/sse.js';
import type { HermesProxyExchange } from './classify-hermes-proxy.js';
import { messageEvent, parseFrame, parseRetryAfter, type ChunkFacts } from './hermes-proxy-events.js';
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

/** Run the exchange, yielding `runtime.message`/`runtime.raw`/`runtime.log` events; returns the facts. */
export async function* runHermesProxyExchange(input: HermesProxyRunInput): AsyncGenerator<RuntimeEventV1, HermesProxyRunResult> {
  const { config, secrets } = input;
  const url = `${config.endpoint}/chat/completions`;
  const scrub = (text: string) => redactString(text, secrets);
  const out = new TextLog(join(input.logDir, 'runtime.stdout.log'));
  const diag = new TextLog(join(input.logDir, 'runtime.stderr.log'));
  const x: HermesProxyExchange = {
    endpoint: config.endpoint, model: config.model, provider: config.provider,
    abort: null, requestTimedOut: false, requestTimeoutMs: config.request_timeout_ms,
    networkError: null, httpStatus: null, errorEnvelope: null, errorBody: null, retryAfterMs: null,
    bodyError: null, contentChars: 0, complete: false, finishReason: null,
  };
  const scanner = new SentinelScanner();
  let usage: Usage | undefined;
  let responseId: string | undefined;
  const controller = new AbortController();
  /** Set once the reply has been read: a cancel or timer firing later changes nothing. */
  let settled = false;
  const onAbort = () => {
    if (settled || controller.signal.aborted) return; // the first of cancel, timer and completion wins
    x.abort = abortReasonOf(input.signal);
    controller.abort(input.signal.reason);
  };
  if (input.signal.aborted) onAbort();
  else input.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => {
    if (settled || controller.signal.aborted) return;
    x.requestTimedOut = true;
    controller.abort(new Error(`request timed out after ${config.request_timeout_ms} ms`));
  }, config.request_timeout_ms);
  let response: Awaited<ReturnType<typeof import('undici').request>> | undefined;
  const apply = (facts: ChunkFacts) => {
    if (facts.finishReason) x.finishReason = facts.finishReason;
    if (facts.usage) usage = facts.usage;
    responseId ??= facts.id;
  };
  /** Count, scan and log a piece of assistant text; returns its event (scrubbed). */
  const takeText = async (text: string): Promise<RuntimeEventV1> => {
    x.contentChars += text.length;
    const clean = scrub(text);
    scanner.push(clean);
    const pending = out.write(clean);
    if (pending) await pending;
    return messageEvent(clean);
  };
  try {
    const { request } = await import('undici');
    await diag.write(`POST ${url} model=${config.model} stream=${config.stream}\n`);
    try {
      response = await request(url, {
        method: 'POST',
        headers: requestHeaders(config),
        body: JSON.stringify(input.body),
        signal: controller.signal,
        headersTimeout: 0, // the request timer above is the budget
        bodyTimeout: 0,
      });
    } catch (error) {
      if (!controller.signal.aborted) x.networkError = scrubbed(networkErrorOf(error), scrub);
      return finish();
    }
    x.httpStatus = response.statusCode;
    const contentType = String(response.headers['content-type'] ?? '');
    await diag.write(`HTTP ${response.statusCode} ${contentType}\n`);
    yield { type: 'runtime.log', data: { level: 'info', message: `HTTP ${response.statusCode} ${contentType}`.trim(), http_status: response.statusCode } };
    if (response.statusCode < 200 || response.statusCode > 299) {
      const header = response.headers['retry-after'];
      x.retryAfterMs = parseRetryAfter(Array.isArray(header) ? header[0] : header, input.now());
      const text = scrub(await bodyText(response.body, MAX_ERROR_BODY).catch(() => ''));
      await diag.write(`${text}\n`);
      x.errorEnvelope = parseErrorEnvelope(text);
      if (!x.errorEnvelope) x.errorBody = text.slice(0, 2048);
      return finish();
    }
    const { sse, body } = await sniffSse(response.body, contentType);
    if (sse) {
      let rawReports = 0;
      let unparsed = 0;
      let frames = 0;
      for await (const batch of readSseBatches(body)) {
        let text = '';
        for (const item of batch) {
          frames += 1;
          if (item.type === 'done') x.complete = true;
          else if (item.type === 'error') {
            if (!controller.signal.aborted) x.bodyError = scrub(describeError(item.error));
          } else {
            const frame = parseFrame(item.data);
            if (frame.kind === 'chunk') {
              apply(frame.facts);
              text += frame.facts.text;
            } else if (frame.kind === 'error') {
              x.errorEnvelope = { ...frame.envelope, message: scrub(frame.envelope.message) };
            } else {
              unparsed += 1;
              if (rawReports++ < MAX_RAW_REPORTS) yield { type: 'runtime.raw', data: { source: 'sse', line: scrub(item.data.slice(0, 500)), reason: frame.reason } };
            }
          }
        }
        if (text !== '') yield await takeText(text);
        if (x.errorEnvelope) break;
      }
      settled = true;
      if (x.finishReason !== null) x.complete = true;
      // Sniffed as SSE only for want of a JSON start, and not one frame in it: say what it was.
      if (frames === 0 && x.bodyError === null && !/event-stream/i.test(contentType)) {
        x.bodyError = `the reply is neither SSE nor JSON (content-type ${contentType || 'none'})`;
      }
      if (unparsed > MAX_RAW_REPORTS) yield { type: 'runtime.log', data: { level: 'warn', message: `${unparsed} SSE frames were not completion chunks (first ${MAX_RAW_REPORTS} reported)` } };
    } else {
      let text: string;
      try {
        text = await bodyText(body, MAX_JSON_BODY, true);
      } catch (error) {
        if (!controller.signal.aborted) x.bodyError = scrub(describeError(error));
        return finish();
      }
      const frame = parseFrame(text, true);
      if (frame.kind === 'chunk') {
        apply(frame.facts);
        x.complete = true;
        if (frame.facts.text !== '') yield await takeText(frame.facts.text);
      } else if (frame.kind === 'error') x.errorEnvelope = { ...frame.envelope, message: scrub(frame.envelope.message) };
      else x.bodyError = `the reply is neither SSE nor a chat completion (${frame.reason}): ${scrub(text.slice(0, 200))}`;
    }
    return finish();
  } finally {
    clearTimeout(timer);
    input.signal.removeEventListener('abort', onAbort);
    if (response && !response.body.destroyed) response.body.destroy();
    await Promise.all([out.close(), diag.close()]);
  }

  function finish(): HermesProxyRunResult {
    settled = true;
    const sentinel = scanner.result();
    // Scrubbed again whole: a secret split across two network reads escapes the per-chunk scrub.
    return { exchange: x, sentinel: sentinel === null ? null : scrub(sentinel), usage, responseId, logs: [out.path, diag.path] };
  }
}

function describeError(error: unknown): string {
  const net = networkErrorOf(error);
  return net.code ? `${net.code}: ${net.message}` : net.message;
}

function scrubbed(net: { code: string | null; message: string }, scrub: (t: string) => string) {
  return { code: net.code, message: scrub(net.message) };
}
