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

/** What every row reads: the exchange plus the facts derived once. */
interface Facts {
  x: HermesProxyExchange;
  provider: string;
  /** The re-authentication hint of the upstream. */
  reauth: string;
  /** A non-2xx status, or an error envelope (also inside a 200 stream). */
  httpError: boolean;
  /** `http:<status|stream>[:<type>]`. */
  httpRaw: string;
  /** The envelope's `type: message`, else the body, for operators. */
  verbatim: string;
  /** `HTTP <status>`, noting an error frame inside a 2xx stream. */
  what: string;
}

type Row = readonly [
  name: string,
  when: (f: Facts) => boolean,
  outcome: (f: Facts) => Omit<Outcome, 'timed_out' | 'exit_code' | 'signal'> & { timed_out?: boolean },
];

const envField = (f: Facts, value: string) => f.x.errorEnvelope?.type === value || f.x.errorEnvelope?.code === value;

/**
 * The rows in fixed priority: abort (cancel, mission timeout) → request timeout → network error
 * → HTTP/envelope error → broken body → truncated stream → empty reply → completed. They follow
 * the spec's status table and the spike's error table; the first row that matches wins.
 */
const HERMES_PROXY_ROWS: readonly Row[] = [
  [
    'timeout',
    (f) => f.x.abort?.kind === 'timeout',
    (f) => ({ status: 'failed', raw: 'timeout', message: f.x.abort!.message, timed_out: true }),
  ],
  [
    'cancel',
    (f) => f.x.abort?.kind === 'cancel',
    (f) => ({ status: 'cancelled', raw: 'cancel', message: f.x.abort!.message }),
  ],
  [
    'request timeout',
    (f) => f.x.requestTimedOut,
    (f) => ({
      status: 'failed',
      raw: 'request_timeout',
      message: `request timed out after ${f.x.requestTimeoutMs} ms`,
      hint: 'raise runtime_config.request_timeout_ms, or check the upstream with "hermes proxy status"',
      timed_out: true,
    }),
  ],
  [
    'proxy not running',
    (f) => f.x.networkError?.code === 'ECONNREFUSED',
    (f) => ({
      status: 'blocked',
      raw: 'network:ECONNREFUSED',
      message: `endpoint unreachable: ${f.x.endpoint} (is "hermes proxy start" running?)`,
      hint: `start the proxy with "hermes proxy start --provider ${f.provider}" or fix runtime_config.endpoint`,
    }),
  ],
  [
    'unreachable',
    (f) => UNREACHABLE_CODES.has(f.x.networkError?.code ?? ''),
    (f) => ({
      status: 'blocked',
      raw: `network:${f.x.networkError!.code}`,
      message: f.x.networkError!.message,
      hint: `check that ${f.x.endpoint} is reachable from this worker`,
    }),
  ],
  [
    'network error',
    (f) => f.x.networkError !== null,
    (f) => ({
      status: 'failed',
      raw: `network:${f.x.networkError!.code ?? 'error'}`,
      message: f.x.networkError!.message,
    }),
  ],
  [
    'upstream auth',
    (f) => {
      const env = f.x.errorEnvelope;
      return (
        f.httpError &&
        env !== null &&
        (env.type === 'upstream_auth_failed' ||
          env.type === 'credential_pool_exhausted' ||
          AUTH_MESSAGE.test(env.message) ||
          AUTH_MESSAGE.test(String(env.code ?? '')))
      );
    },
    (f) => ({
      status: 'blocked',
      raw: f.httpRaw,
      message: `upstream auth failed: ${f.x.errorEnvelope!.message}`,
      hint: f.reauth,
    }),
  ],
  [
    'proxy cannot reach its upstream',
    (f) => f.httpError && envField(f, 'upstream_unreachable'),
    (f) => ({
      status: 'blocked',
      raw: f.httpRaw,
      message: `the proxy could not reach its upstream: ${f.x.errorEnvelope!.message}`,
      hint: 'check the proxy host\'s network and "hermes proxy status", then re-run',
    }),
  ],
  [
    'proxy refused',
    (f) => f.httpError && (f.x.httpStatus === 401 || f.x.httpStatus === 403),
    (f) => ({
      status: 'blocked',
      raw: f.httpRaw,
      message: `proxy refused the request (${f.what}): ${f.verbatim}`,
      hint: f.reauth,
    }),
  ],
  [
    'rate limited',
    (f) => f.httpError && (f.x.httpStatus === 429 || envField(f, 'rate_limit_exceeded')),
    (f) => {
      const after = f.x.retryAfterMs;
      return {
        status: 'blocked',
        raw: f.httpRaw,
        message: `rate limited by the upstream${after !== null ? ` (retry after ${Math.ceil(after / 1000)} s)` : ''}: ${f.verbatim}`,
        hint: 're-run later; the queue retries after Retry-After when it is known',
        ...(after !== null ? { retry_after_ms: after } : {}),
      };
    },
  ],
  [
    'path not forwarded',
    // The proxy's own 404 for a /v1 path, or its web server's plain `404: Not Found` outside /v1.
    (f) => f.httpError && (envField(f, 'path_not_allowed') || (f.x.httpStatus === 404 && f.x.errorEnvelope === null)),
    (f) => ({
      status: 'failed',
      raw: f.httpRaw,
      message: `proxy does not forward this path (${f.what}): ${f.verbatim}`,
      hint: `runtime_config.endpoint must be the proxy base including /v1 (e.g. http://127.0.0.1:8645/v1); got ${f.x.endpoint}`,
    }),
  ],
  [
    'model not available',
    (f) => {
      const env = f.x.errorEnvelope;
      return (
        f.httpError &&
        f.x.httpStatus === 404 &&
        env !== null &&
        /model/i.test(`${env.message} ${env.type ?? ''} ${env.code ?? ''}`)
      );
    },
    (f) => ({
      status: 'blocked',
      raw: f.httpRaw,
      message: `model "${f.x.model}" not available on this proxy`,
      hint: 'list the models with "uh adapter check hermes-proxy" and fix runtime_config.model',
    }),
  ],
  [
    'other HTTP error',
    (f) => f.httpError,
    (f) => ({ status: 'failed', raw: f.httpRaw, message: `${f.what}: ${f.verbatim}` }),
  ],
  [
    'broken body',
    (f) => f.x.bodyError !== null,
    (f) => ({
      status: 'failed',
      raw: 'stream_error',
      message: `the reply broke after ${f.x.contentChars} chars: ${f.x.bodyError}`,
      ...(f.x.contentChars === 0
        ? { hint: 'empty assistant message; check "hermes proxy status" and the upstream' }
        : {}),
    }),
  ],
  [
    'truncated',
    (f) => !f.x.complete,
    (f) => ({
      status: 'failed',
      raw: 'stream_truncated',
      message: `the stream ended before [DONE] or a finish_reason, after ${f.x.contentChars} chars`,
      hint: 'the proxy or upstream closed the stream early; re-run, and check "hermes proxy status"',
    }),
  ],
  [
    'empty',
    (f) => f.x.contentChars === 0,
    (f) => ({
      status: 'failed',
      raw: `empty:${f.x.finishReason ?? 'none'}`,
      message: `empty assistant message${f.x.finishReason ? ` (finish_reason ${f.x.finishReason})` : ''}`,
    }),
  ],
  [
    'completed',
    () => true,
    (f) => ({
      status: 'completed',
      raw: `http:${f.x.httpStatus ?? 200}`,
      message: `assistant replied with ${f.x.contentChars} chars${f.x.finishReason ? ` (finish_reason ${f.x.finishReason})` : ''}`,
    }),
  ],
];

function factsOf(x: HermesProxyExchange): Facts {
  const provider = x.provider ?? 'nous';
  const status = x.httpStatus;
  const env = x.errorEnvelope;
  return {
    x,
    provider,
    reauth: `run "hermes auth status ${provider}" and re-authenticate (e.g. "hermes auth add ${provider}"), then re-run`,
    httpError: env !== null || (status !== null && (status < 200 || status > 299)),
    httpRaw: `http:${status ?? 'stream'}${env?.type ? `:${env.type}` : ''}`,
    verbatim: env ? `${env.type ?? 'error'}: ${env.message}` : (x.errorBody ?? '').trim() || '(empty body)',
    what: `HTTP ${status ?? 200}${env && status !== null && status >= 200 && status < 300 ? ' (error frame in stream)' : ''}`,
  };
}

/** The `hermes-proxy` outcome: the first row of {@link HERMES_PROXY_ROWS} that matches. Pure. */
export function classifyHermesProxy(x: HermesProxyExchange): Outcome {
  const f = factsOf(x);
  const row = HERMES_PROXY_ROWS.find(([, when]) => when(f))!;
  return { timed_out: false, exit_code: null, signal: null, ...row[2](f) };
}
