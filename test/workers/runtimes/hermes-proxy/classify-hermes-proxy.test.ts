import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../../../src/shared/contracts/runtime-result.js';
import {
  classifyHermesProxy,
  type HermesProxyExchange,
} from '../../../../src/workers/runtimes/hermes-proxy/classify-hermes-proxy.js';
import { parseRetryAfterHeader as parseRetryAfter } from '../../../../src/shared/runtime/provider-errors.js';

const ENDPOINT = 'http://127.0.0.1:8645/v1';
const ok: HermesProxyExchange = {
  endpoint: ENDPOINT,
  model: 'hermes-4-405b',
  provider: 'nous',
  abort: null,
  requestTimedOut: false,
  requestTimeoutMs: 300_000,
  networkError: null,
  httpStatus: 200,
  errorEnvelope: null,
  errorBody: null,
  retryAfterMs: null,
  bodyError: null,
  contentChars: 120,
  complete: true,
  finishReason: 'stop',
};
const http = (
  status: number,
  type: string | null,
  message: string,
  extra: Partial<HermesProxyExchange> = {},
): Partial<HermesProxyExchange> => ({
  httpStatus: status,
  errorEnvelope: { message, type, code: type },
  contentChars: 0,
  complete: false,
  finishReason: null,
  ...extra,
});

type Row = [string, Partial<HermesProxyExchange>, Partial<Outcome> & { messageHas?: string; hintHas?: string }];

// One row per row of spec/hermes-proxy-adapter.md "Status classification" and the spike's error table.
const ROWS: Row[] = [
  [
    'networkError ECONNREFUSED → blocked, "hermes proxy start" hint',
    { networkError: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:8645' }, httpStatus: null },
    {
      status: 'blocked',
      raw: 'network:ECONNREFUSED',
      messageHas: `endpoint unreachable: ${ENDPOINT} (is "hermes proxy start" running?)`,
      hintHas: 'hermes proxy start',
    },
  ],
  [
    'networkError ETIMEDOUT → blocked, verbatim',
    { networkError: { code: 'ETIMEDOUT', message: 'connect ETIMEDOUT 10.0.0.9:8645' }, httpStatus: null },
    { status: 'blocked', raw: 'network:ETIMEDOUT', messageHas: 'connect ETIMEDOUT 10.0.0.9:8645' },
  ],
  [
    'networkError ENETUNREACH → blocked, verbatim',
    { networkError: { code: 'ENETUNREACH', message: 'connect ENETUNREACH' }, httpStatus: null },
    { status: 'blocked', raw: 'network:ENETUNREACH', messageHas: 'connect ENETUNREACH' },
  ],
  [
    'other networkError → failed, verbatim',
    { networkError: { code: 'UND_ERR_SOCKET', message: 'other side closed' }, httpStatus: null },
    { status: 'failed', raw: 'network:UND_ERR_SOCKET', messageHas: 'other side closed' },
  ],
  [
    'runner timed out → failed, "request timed out after N ms"',
    { requestTimedOut: true, requestTimeoutMs: 1500, httpStatus: null },
    { status: 'failed', raw: 'request_timeout', timed_out: true, messageHas: 'request timed out after 1500 ms' },
  ],
  [
    'mission timeout abort → failed, timed_out',
    { abort: { kind: 'timeout', message: 'mission timed out after 60 s', timeoutMs: 60_000 } },
    { status: 'failed', raw: 'timeout', timed_out: true, messageHas: 'mission timed out' },
  ],
  [
    'cancel abort → cancelled',
    { abort: { kind: 'cancel', message: 'cancelled by operator' } },
    { status: 'cancelled', raw: 'cancel' },
  ],
  [
    'upstream_auth_failed envelope → blocked, "hermes auth status <provider>"',
    http(401, 'upstream_auth_failed', 'Failed to refresh Nous Portal credentials: Invalid refresh token'),
    {
      status: 'blocked',
      messageHas: 'upstream auth failed: Failed to refresh Nous Portal credentials',
      hintHas: 'hermes auth status nous',
    },
  ],
  [
    'auth-looking message (invalid_api_key) → blocked',
    http(400, 'invalid_request_error', 'Incorrect API key provided (invalid_api_key)'),
    { status: 'blocked', messageHas: 'upstream auth failed', hintHas: 'hermes auth status nous' },
  ],
  [
    'auth-looking message (authentication) → blocked',
    http(500, 'server_error', 'Authentication with the upstream failed'),
    { status: 'blocked', hintHas: 'hermes auth status' },
  ],
  [
    'auth-looking message (OAuth) → blocked',
    http(502, 'bad_gateway', 'OAuth token refresh failed'),
    { status: 'blocked', messageHas: 'upstream auth failed' },
  ],
  [
    'a message only naming the Authorization header is not "upstream auth failed" (401 rule instead)',
    http(401, 'invalid_request_error', 'Missing Authorization header'),
    { status: 'blocked', messageHas: 'proxy refused the request', hintHas: 'hermes auth status' },
  ],
  [
    'HTTP 401 → blocked, re-auth hint with the provider',
    http(401, 'invalid_request_error', 'nope', { provider: 'claude' }),
    { status: 'blocked', raw: 'http:401:invalid_request_error', hintHas: 'hermes auth status claude' },
  ],
  [
    'HTTP 403 → blocked, re-auth hint',
    http(403, 'permission_denied', 'Forbidden'),
    { status: 'blocked', hintHas: 'hermes auth status nous' },
  ],
  [
    'HTTP 404 naming the model → blocked, "model not available"',
    http(404, 'invalid_request_error', 'The model `nope` does not exist', { model: 'nope' }),
    { status: 'blocked', messageHas: 'model "nope" not available on this proxy' },
  ],
  [
    'HTTP 503 credential_pool_exhausted → blocked, re-auth hint',
    http(503, 'credential_pool_exhausted', 'All upstream credentials are exhausted or rejected.'),
    { status: 'blocked', raw: 'http:503:credential_pool_exhausted', hintHas: 'hermes auth status nous' },
  ],
  [
    'HTTP 502 upstream_unreachable → blocked (the proxy host cannot reach its upstream)',
    http(502, 'upstream_unreachable', 'upstream connection failed: Cannot connect to host'),
    { status: 'blocked', raw: 'http:502:upstream_unreachable', hintHas: 'hermes proxy status' },
  ],
  [
    'HTTP 404 without an envelope (endpoint outside /v1) → failed (configuration)',
    { httpStatus: 404, errorBody: '404: Not Found', contentChars: 0, complete: false, finishReason: null },
    { status: 'failed', raw: 'http:404', hintHas: 'must be the proxy base including /v1' },
  ],
  [
    'HTTP 404 path_not_allowed → failed (configuration)',
    http(404, 'path_not_allowed', 'Path /chat/completions is not allowed'),
    { status: 'failed', raw: 'http:404:path_not_allowed', hintHas: 'must be the proxy base including /v1' },
  ],
  [
    'HTTP 429 → blocked with retry_after_ms from Retry-After',
    http(429, 'rate_limit_exceeded', 'Rate limit reached', { retryAfterMs: 7000 }),
    { status: 'blocked', retry_after_ms: 7000, messageHas: 'retry after 7 s' },
  ],
  [
    'HTTP 429 without Retry-After → blocked, no retry_after_ms',
    http(429, null, 'slow down'),
    { status: 'blocked', retry_after_ms: undefined },
  ],
  [
    'other HTTP 4xx → failed, envelope verbatim',
    http(400, 'invalid_request_error', "'messages' must not be empty"),
    {
      status: 'failed',
      raw: 'http:400:invalid_request_error',
      messageHas: "HTTP 400: invalid_request_error: 'messages' must not be empty",
    },
  ],
  [
    'HTTP 5xx → failed, envelope verbatim',
    http(500, 'server_error', 'The upstream had an internal error'),
    { status: 'failed', messageHas: 'HTTP 500: server_error: The upstream had an internal error' },
  ],
  [
    'HTTP 5xx with a non-JSON body → failed, body verbatim',
    { httpStatus: 502, errorBody: '<h1>502 Bad Gateway</h1>', contentChars: 0, complete: false },
    { status: 'failed', raw: 'http:502', messageHas: 'HTTP 502: <h1>502 Bad Gateway</h1>' },
  ],
  [
    'error frame inside a 200 stream → failed, verbatim',
    { errorEnvelope: { message: 'upstream overloaded', type: 'server_error', code: 'server_error' } },
    { status: 'failed', messageHas: 'error frame in stream' },
  ],
  [
    'runner broke mid-body (exitCode != 0) → failed, empty-message hint',
    { bodyError: 'UND_ERR_SOCKET: other side closed', contentChars: 0, complete: false },
    { status: 'failed', raw: 'stream_error', hintHas: 'empty assistant message' },
  ],
  [
    'stream cut before [DONE] and finish_reason → failed, truncated',
    { complete: false, finishReason: null, contentChars: 14 },
    { status: 'failed', raw: 'stream_truncated' },
  ],
  [
    'HTTP 200 + empty content → failed, "empty assistant message"',
    { contentChars: 0 },
    { status: 'failed', messageHas: 'empty assistant message' },
  ],
  ['HTTP 200 + content → completed', {}, { status: 'completed', raw: 'http:200' }],
];

describe('classifyHermesProxy', () => {
  it.each(ROWS)('%s', (_name, patch, expected) => {
    const { messageHas, hintHas, ...fields } = expected;
    const outcome = classifyHermesProxy({ ...ok, ...patch });
    if ('retry_after_ms' in fields && fields.retry_after_ms === undefined) {
      delete fields.retry_after_ms;
      expect(outcome).not.toHaveProperty('retry_after_ms');
    }
    expect(outcome).toMatchObject(fields);
    if (messageHas) expect(outcome.message).toContain(messageHas);
    if (hintHas) expect(outcome.hint).toContain(hintHas);
  });

  it('puts cancel above everything else it saw', () => {
    expect(
      classifyHermesProxy({
        ...ok,
        abort: { kind: 'cancel', message: 'c' },
        requestTimedOut: true,
        networkError: { code: 'ECONNREFUSED', message: '' },
      }).status,
    ).toBe('cancelled');
  });
});

describe('parseRetryAfter', () => {
  it.each([
    ['7', 7000],
    ['0', 0],
    ['1.5', 1500],
    ['Mon, 30 Nov 2026 10:00:30 GMT', 30_000],
    ['Mon, 30 Nov 2026 09:00:00 GMT', 0],
    ['soon', null],
    [undefined, null],
  ] as Array<[string | undefined, number | null]>)('%s → %s', (value, expected) => {
    expect(parseRetryAfter(value, Date.parse('Mon, 30 Nov 2026 10:00:00 GMT'))).toBe(expected);
  });
});
