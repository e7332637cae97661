/**
 * Small helpers of the ACP run: error → failure (with the answer's `error.data`, bounded and
 * scrubbed), the usage an agent reports wherever it reports it, client notices → events, and the
 * abort-aware waits.
 */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import { redactString } from '../../../shared/redact.js';
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { JsonRpcRemoteError, JsonRpcTransportError } from '../../../shared/transport/jsonrpc-errors.js';
import type { AcpClientNotice } from './acp-client.js';
import { AcpProtocolError } from './acp-protocol-error.js';
import { ACP_AUTH_REQUIRED_CODE, type PromptResponse } from './acp-protocol.js';
import type { AcpFailure } from './classify-acp.js';

/** The agent needs a login we cannot do (no usable method, or it refused ours). */
export class AuthRequiredError extends Error {
  override readonly name = 'AuthRequiredError';
}

/** Cap on the `error.data` kept in a failure message. */
export const ERROR_DATA_CAP = 600;
/** Key-shaped strings scrubbed from `error.data` even when we do not know the secret itself. */
const KEY_SHAPES =
  /\b(sk-[A-Za-z0-9_-]{8,}|AIza[0-9A-Za-z_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,})|(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/g;

/** `error.data` as one bounded line with secrets scrubbed; empty when there is none. */
export function errorDataText(data: unknown, secrets: readonly string[] = []): string {
  if (data === undefined || data === null) return '';
  let text: string;
  try {
    text = typeof data === 'string' ? data : JSON.stringify(data);
  } catch {
    text = String(data);
  }
  text = redactString(text.replace(/\s+/g, ' ').trim(), secrets).replace(
    KEY_SHAPES,
    (_m, key: string | undefined, bearer: string | undefined) => (key ? '[redacted]' : `${bearer ?? ''}[redacted]`),
  );
  return text.length > ERROR_DATA_CAP ? `${text.slice(0, ERROR_DATA_CAP)}…` : text;
}

export function toFailure(error: unknown, secrets: readonly string[] = []): AcpFailure {
  if (error instanceof AuthRequiredError) return { kind: 'auth_required', message: error.message };
  if (JsonRpcTransportError.isInstance(error)) {
    const d = error.details;
    switch (error.kind) {
      case 'spawn':
        return { kind: 'spawn', code: d.code ?? 'ESPAWN', message: error.message };
      case 'timeout':
        return { kind: 'request_timeout', method: d.method ?? 'request', message: error.message };
      case 'exited':
        return { kind: 'exited', message: error.message, exitCode: d.exitCode ?? null, signal: d.signal ?? null };
      case 'cancelled':
      case 'closed':
        return { kind: 'protocol', message: error.message };
    }
  }
  if (JsonRpcRemoteError.isInstance(error)) {
    const data = errorDataText(error.data, secrets);
    const message = data
      ? `${redactString(error.rpcMessage, secrets)}: ${data}`
      : redactString(error.rpcMessage, secrets);
    if (error.code === ACP_AUTH_REQUIRED_CODE) return { kind: 'auth_required', message };
    return { kind: 'remote', method: error.method ?? 'request', code: error.code, message };
  }
  if (AcpProtocolError.isInstance(error)) return { kind: 'protocol', message: error.message };
  return { kind: 'protocol', message: error instanceof Error ? error.message : String(error) };
}

type Counts = Record<string, unknown>;
/** Where agents put a prompt's token counts, first found wins: ACP `usage`, `_meta.usage`, Gemini CLI's `_meta.quota.token_count`. */
const USAGE_PLACES: readonly ((answer: PromptResponse) => unknown)[] = [
  (a) => a.usage,
  (a) => (a._meta as Counts | undefined)?.usage,
  (a) => ((a._meta as Counts | undefined)?.quota as Counts | undefined)?.token_count,
];
/** Our usage key ← the names agents use for it (ACP camelCase, snake_case, OpenAI's). */
const USAGE_KEYS: readonly (readonly [keyof Usage, readonly string[]])[] = [
  ['input_tokens', ['inputTokens', 'input_tokens', 'prompt_tokens']],
  ['output_tokens', ['outputTokens', 'output_tokens', 'completion_tokens']],
  ['total_tokens', ['totalTokens', 'total_tokens']],
  ['reasoning_tokens', ['thoughtTokens', 'reasoning_tokens', 'thoughts_tokens']],
  ['cached_input_tokens', ['cachedReadTokens', 'cached_input_tokens', 'cached_tokens']],
];

/** The usage one prompt answer reports, wherever the agent put it; null when it reported none. */
export function usageOfAnswer(answer: PromptResponse): Usage | null {
  for (const place of USAGE_PLACES) {
    const usage = usageOf(place(answer));
    if (usage) return usage;
  }
  return null;
}

/** One usage object in any of the known spellings → our usage (null when empty). */
export function usageOf(raw: unknown): Usage | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const counts = raw as Counts;
  const out: Usage = {};
  for (const [key, names] of USAGE_KEYS) {
    const value = names.map((n) => counts[n]).find((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0);
    if (typeof value === 'number') out[key] = Math.round(value);
  }
  return Object.keys(out).length ? out : null;
}

export function noticeEvent(notice: AcpClientNotice): RuntimeEventV1 {
  switch (notice.kind) {
    case 'diagnostic': {
      const d = notice.diagnostic;
      if (d.kind === 'oversized')
        return {
          type: 'runtime.raw',
          data: { source: 'acp.stdout', reason: `oversized line (${d.bytes} bytes) rejected`, line: d.head },
        };
      if (d.kind === 'handler_error')
        return { type: 'runtime.log', data: { level: 'warn', message: `handling ${d.method} failed: ${d.message}` } };
      if (d.kind === 'unmatched_response')
        return {
          type: 'runtime.raw',
          data: { source: 'acp.stdout', reason: 'response to no pending request', line: d.line },
        };
      return {
        type: 'runtime.raw',
        data: {
          source: 'acp.stdout',
          reason: d.kind === 'non_json' ? 'not JSON' : `not a JSON-RPC message: ${d.reason}`,
          line: d.line,
        },
      };
    }
    case 'unsupported_request':
      return {
        type: 'runtime.raw',
        data: { source: 'acp.request', method: notice.method, reason: 'unsupported agent request, answered -32601' },
      };
    case 'unrouted':
      return {
        type: 'runtime.raw',
        data: {
          source: 'acp.notification',
          method: notice.method,
          reason: `not for a session of this run (${notice.sessionId ?? 'no session id'})`,
        },
      };
  }
}

/** Wait `ms`, or less when the signal aborts. */
export function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Reject as soon as the signal aborts (the work goes on; the child is poisoned by the caller). */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
