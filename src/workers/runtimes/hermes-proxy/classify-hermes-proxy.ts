import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import type { AbortReasonV1 } from '../../../shared/runtime/v1/runtime-context.js';
import type { ErrorEnvelope } from './hermes-proxy-protocol.js';

/** Everything the runner learnt about one exchange with the proxy; the input of the classifier. */
export interface HermesProxyExchange {
  endpoint: string;
  model: string;
  provider: string | undefined;
  /** Set when the run's signal was aborted (cancel or mission timeout). */
  abort: AbortReasonV1 | null;
  /** The adapter's own `request_timeout_ms` fired. */
  requestTimedOut: boolean;
  requestTimeoutMs: number;
  /** The request failed before any response (`code` from the socket error, e.g. ECONNREFUSED). */
  networkError: { code: string | null; message: string } | null;
  httpStatus: number | null;
  /** From a non-2xx JSON body, or an `{"error":…}` frame inside a 200 stream. */
  errorEnvelope: ErrorEnvelope | null;
  /** A non-2xx body that is not an envelope (HTML, plain text), capped. */
  errorBody: string | null;
  retryAfterMs: number | null;
  /** The body broke after the response began (socket reset, parser limit). */
  bodyError: string | null;
  /** Characters of assistant text received. */
  contentChars: number;
  /** The reply ran to its end: `[DONE]`, a finish_reason, or a complete JSON body. */
  complete: boolean;
  finishReason: string | null;
}

/** Network errors that mean "the operator must bring the proxy (or the network) back". */
const UNREACHABLE_CODES = new Set(['ETIMEDOUT', 'ENETUNREACH', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
/**
 * The spec's "message matches auth(entication)? / invalid_api_key", on word boundaries so that a
 * message merely naming the `Authorization` header is not read as an upstream login problem.
 */
const AUTH_MESSAGE = /\b(o?auth|authentication|unauthori[sz]ed)\b|invalid_api_key/i;

/**
 * The `hermes-proxy` outcome, in fixed priority: abort (cancel, mission timeout) → request
 * timeout → network error → HTTP/envelope error → broken body → truncated stream → empty
 * reply → completed. Rows follow the spec's status table and the spike's error table. Pure.
 */
export function classifyHermesProxy(x: HermesProxyExchange): Outcome {
  const provider = x.provider ?? 'nous';
  const reauth = `run "hermes auth status ${provider}" and re-authenticate (e.g. "hermes auth add ${provider}"), then re-run`;
  const base = { timed_out: false, exit_code: null, signal: null } as const;
  if (x.abort?.kind === 'timeout') return { ...base, status: 'failed', raw: 'timeout', message: x.abort.message, timed_out: true };
  if (x.abort?.kind === 'cancel') return { ...base, status: 'cancelled', raw: 'cancel', message: x.abort.message };
  if (x.requestTimedOut) {
    return {
      ...base,
      status: 'failed',
      raw: 'request_timeout',
      message: `request timed out after ${x.requestTimeoutMs} ms`,
      hint: 'raise runtime_config.request_timeout_ms, or check the upstream with "hermes proxy status"',
      timed_out: true,
    };
  }
  if (x.networkError) {
    const { code, message } = x.networkError;
    const raw = `network:${code ?? 'error'}`;
    if (code === 'ECONNREFUSED') {
      return {
        ...base,
        status: 'blocked',
        raw,
        message: `endpoint unreachable: ${x.endpoint} (is "hermes proxy start" running?)`,
        hint: `start the proxy with "hermes proxy start --provider ${provider}" or fix runtime_config.endpoint`,
      };
    }
    if (code !== null && UNREACHABLE_CODES.has(code)) {
      return { ...base, status: 'blocked', raw, message, hint: `check that ${x.endpoint} is reachable from this worker` };
    }
    return { ...base, status: 'failed', raw, message };
  }
  const status = x.httpStatus;
  const env = x.errorEnvelope;
  if (env || (status !== null && (status < 200 || status > 299))) {
    const raw = `http:${status ?? 'stream'}${env?.type ? `:${env.type}` : ''}`;
    const verbatim = env ? `${env.type ?? 'error'}: ${env.message}` : (x.errorBody ?? '').trim() || '(empty body)';
    const what = `HTTP ${status ?? 200}${env && status !== null && status >= 200 && status < 300 ? ' (error frame in stream)' : ''}`;
    if (env && (env.type === 'upstream_auth_failed' || AUTH_MESSAGE.test(env.message) || AUTH_MESSAGE.test(String(env.code ?? '')))) {
      return { ...base, status: 'blocked', raw, message: `upstream auth failed: ${env.message}`, hint: reauth };
    }
    if (status === 401 || status === 403) {
      return { ...base, status: 'blocked', raw, message: `proxy refused the request (${what}): ${verbatim}`, hint: reauth };
    }
    if (status === 429 || env?.type === 'rate_limit_exceeded' || env?.code === 'rate_limit_exceeded') {
      const after = x.retryAfterMs;
      const outcome: Outcome = {
        ...base,
        status: 'blocked',
        raw,
        message: `rate limited by the upstream${after !== null ? ` (retry after ${Math.ceil(after / 1000)} s)` : ''}: ${verbatim}`,
        hint: 're-run later; the queue retries after Retry-After when it is known',
      };
      if (after !== null) outcome.retry_after_ms = after;
      return outcome;
    }
    if (env?.type === 'path_not_allowed' || env?.code === 'path_not_allowed') {
      return {
        ...base,
        status: 'failed',
        raw,
        message: `proxy does not forward this path (${what}): ${env.message}`,
        hint: `runtime_config.endpoint must be the proxy base including /v1 (e.g. http://127.0.0.1:8645/v1); got ${x.endpoint}`,
      };
    }
    if (status === 404 && env && /model/i.test(`${env.message} ${env.type ?? ''} ${env.code ?? ''}`)) {
      return {
        ...base,
        status: 'blocked',
        raw,
        message: `model "${x.model}" not available on this proxy`,
        hint: 'list the models with "uh adapter check hermes-proxy" and fix runtime_config.model',
      };
    }
    return { ...base, status: 'failed', raw, message: `${what}: ${verbatim}` };
  }
  if (x.bodyError !== null) {
    return {
      ...base,
      status: 'failed',
      raw: 'stream_error',
      message: `the reply broke after ${x.contentChars} chars: ${x.bodyError}`,
      ...(x.contentChars === 0 ? { hint: 'empty assistant message; check "hermes proxy status" and the upstream' } : {}),
    };
  }
  if (!x.complete) {
    return {
      ...base,
      status: 'failed',
      raw: 'stream_truncated',
      message: `the stream ended before [DONE] or a finish_reason, after ${x.contentChars} chars`,
      hint: 'the proxy or upstream closed the stream early; re-run, and check "hermes proxy status"',
    };
  }
  if (x.contentChars === 0) {
    return {
      ...base,
      status: 'failed',
      raw: `empty:${x.finishReason ?? 'none'}`,
      message: `empty assistant message${x.finishReason ? ` (finish_reason ${x.finishReason})` : ''}`,
    };
  }
  return {
    ...base,
    status: 'completed',
    raw: `http:${status ?? 200}`,
    message: `assistant replied with ${x.contentChars} chars${x.finishReason ? ` (finish_reason ${x.finishReason})` : ''}`,
  };
}
