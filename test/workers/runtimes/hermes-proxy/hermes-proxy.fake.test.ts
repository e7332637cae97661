/**
 * The hermes-proxy adapter against the fake proxy running as its own process: one row per row
 * of the spec's status table and the spike's error table, plus streaming, cancel and secrets.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeEventV1 } from '../../../../src/shared/runtime/v1/index.js';
import { hermesProxyAdapter } from '../../../../src/workers/runtimes/hermes-proxy/hermes-proxy-adapter.js';
import { startFakeProxy, type FakeProxy } from '../../../fixtures/fake-hermes-proxy/start-fake-proxy.js';
import { runAdapter, terminalOf, type AdapterRun } from '../../../support/run-adapter.js';

const BEARER = 'sk-hermes-proxy-bearer-9c1e77';
const TEAM_KEY = 'team-secret-value-77aa';
const SECRETS = [BEARER, TEAM_KEY];

let fake: FakeProxy;
let closedPortUrl: string;

beforeAll(async () => {
  fake = await startFakeProxy('sse-success');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  closedPortUrl = `http://127.0.0.1:${port}/v1`;
});
afterAll(async () => fake?.close());

function config(patch: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    endpoint: fake.url,
    model: 'sse-success',
    auth_token: BEARER,
    extra_headers: { 'x-team-key': TEAM_KEY },
    ...patch,
  };
}

/** Everything a run left behind that a person or the pipeline could read: events and log files. */
function everythingWritten(run: AdapterRun): string {
  const logs = readdirSync(run.logDir).map((f) => readFileSync(join(run.logDir, f), 'utf8'));
  return JSON.stringify(run.events) + logs.join('\n');
}

function expectWellFormed(run: AdapterRun): void {
  expect(run.events[0]?.type).toBe('runtime.started');
  expect(run.events.filter((e) => e.type === 'runtime.finished')).toHaveLength(1);
  expect(run.events.at(-1)?.type).toBe('runtime.finished');
  const written = everythingWritten(run);
  for (const secret of SECRETS) expect(written).not.toContain(secret);
}

interface Expect {
  status: 'completed' | 'failed' | 'blocked' | 'cancelled';
  raw?: string | RegExp;
  messageHas?: string;
  hintHas?: string;
  timed_out?: boolean;
  retry_after_ms?: number;
  final?: string;
}
type Row = [string, () => Record<string, unknown>, Expect];

const ROWS: Row[] = [
  // spec: Status classification
  [
    'ECONNREFUSED → blocked with the "hermes proxy start" hint',
    () => config({ endpoint: closedPortUrl }),
    {
      status: 'blocked',
      raw: 'network:ECONNREFUSED',
      messageHas: '(is "hermes proxy start" running?)',
      hintHas: 'hermes proxy start',
    },
  ],
  [
    'other network error (connection reset before a reply) → failed',
    () => config({ model: 'reset' }),
    { status: 'failed', raw: /^network:/ },
  ],
  [
    'request timeout before headers → failed, timed_out',
    () => config({ model: 'hang-headers', request_timeout_ms: 400 }),
    { status: 'failed', raw: 'request_timeout', timed_out: true, messageHas: 'request timed out after 400 ms' },
  ],
  [
    'request timeout mid-stream (hung stream) → failed, timed_out',
    () => config({ model: 'hung', request_timeout_ms: 400 }),
    { status: 'failed', raw: 'request_timeout', timed_out: true },
  ],
  [
    '401 upstream_auth_failed → blocked with "hermes auth status <provider>"',
    () => config({ model: 'auth-failed' }),
    {
      status: 'blocked',
      raw: 'http:401:upstream_auth_failed',
      messageHas: 'upstream auth failed: Failed to refresh Nous Portal credentials',
      hintHas: 'hermes auth status nous',
    },
  ],
  [
    'auth-looking message (invalid_api_key) → blocked',
    () => config({ model: 'auth-message', provider: 'chatgpt' }),
    { status: 'blocked', hintHas: 'hermes auth status chatgpt' },
  ],
  [
    '401 upstream_auth_failed, not logged in → blocked with re-auth hint',
    () => config({ model: 'not-logged-in' }),
    {
      status: 'blocked',
      raw: 'http:401:upstream_auth_failed',
      messageHas: 'Not logged into Nous Portal',
      hintHas: 'hermes auth status nous',
    },
  ],
  [
    '503 credential_pool_exhausted → blocked with re-auth hint',
    () => config({ model: 'pool-exhausted' }),
    { status: 'blocked', raw: 'http:503:credential_pool_exhausted', hintHas: 'hermes auth status nous' },
  ],
  [
    '502 upstream_unreachable → blocked, names the proxy host',
    () => config({ model: 'upstream-unreachable' }),
    {
      status: 'blocked',
      raw: 'http:502:upstream_unreachable',
      messageHas: 'the proxy could not reach its upstream',
      hintHas: 'hermes proxy status',
    },
  ],
  [
    '504 upstream_timeout → failed, verbatim',
    () => config({ model: 'upstream-timeout' }),
    { status: 'failed', raw: 'http:504:upstream_timeout', messageHas: 'upstream request timed out' },
  ],
  [
    '403 → blocked with re-auth hint',
    () => config({ model: 'forbidden' }),
    { status: 'blocked', raw: 'http:403:permission_denied', hintHas: 'hermes auth status nous' },
  ],
  [
    '404 naming the model → blocked',
    () => config({ model: 'model-not-found' }),
    {
      status: 'blocked',
      messageHas: 'model "model-not-found" not available on this proxy',
      hintHas: 'uh adapter check',
    },
  ],
  [
    "endpoint without /v1 (the web server's plain 404) → failed, configuration",
    () => config({ endpoint: fake.origin }),
    { status: 'failed', raw: 'http:404', messageHas: '404: Not Found', hintHas: 'including /v1' },
  ],
  [
    '404 path_not_allowed (a /v1 path the proxy does not forward) → failed, configuration',
    () => config({ endpoint: `${fake.origin}/v1/openai` }),
    {
      status: 'failed',
      raw: 'http:404:path_not_allowed',
      messageHas: 'Path /v1/openai/chat/completions is not forwarded by this proxy. Allowed: /chat/completions',
      hintHas: 'including /v1',
    },
  ],
  [
    '429 → blocked with retry_after_ms from Retry-After',
    () => config({ model: 'rate-limited' }),
    { status: 'blocked', raw: 'http:429:rate_limit_exceeded', retry_after_ms: 7000, messageHas: 'retry after 7 s' },
  ],
  [
    'other 4xx → failed, envelope verbatim',
    () => config({ model: 'bad-request' }),
    {
      status: 'failed',
      raw: 'http:400:invalid_request_error',
      messageHas: "HTTP 400: invalid_request_error: 'messages' must not be empty",
    },
  ],
  [
    '500 → failed, envelope verbatim',
    () => config({ model: 'server-error' }),
    {
      status: 'failed',
      raw: 'http:500:server_error',
      messageHas: 'HTTP 500: server_error: The upstream had an internal error',
    },
  ],
  [
    '502 with a non-JSON body → failed, body verbatim',
    () => config({ model: 'bad-gateway-html' }),
    { status: 'failed', raw: 'http:502', messageHas: '<h1>502 Bad Gateway</h1>' },
  ],
  [
    'error frame inside a 200 SSE stream → failed, verbatim',
    () => config({ model: 'sse-error-frame' }),
    { status: 'failed', raw: 'http:200:server_error', messageHas: 'upstream overloaded' },
  ],
  [
    'stream cut mid-frame (socket dropped) → failed',
    () => config({ model: 'cut-mid-frame' }),
    { status: 'failed', raw: 'stream_error', messageHas: 'after 11 chars' },
  ],
  [
    'stream ended mid-frame without [DONE] → failed, truncated',
    () => config({ model: 'eof-no-done' }),
    { status: 'failed', raw: 'stream_truncated' },
  ],
  [
    '200 that is neither SSE nor JSON → failed, saying so',
    () => config({ model: 'text-plain' }),
    { status: 'failed', raw: 'stream_error', messageHas: 'neither SSE nor JSON (content-type text/plain)' },
  ],
  [
    '200 SSE with empty content → failed',
    () => config({ model: 'sse-empty' }),
    { status: 'failed', messageHas: 'empty assistant message' },
  ],
  [
    '200 JSON with empty content → failed',
    () => config({ model: 'json-empty' }),
    { status: 'failed', messageHas: 'empty assistant message' },
  ],
  [
    '200 SSE + content with sentinel → completed, sentinel is the final message',
    () => config(),
    { status: 'completed', raw: 'http:200', final: 'Did the thing: café ✓ 🙂' },
  ],
  [
    '200 JSON (stream asked, proxy answered JSON) → completed',
    () => config({ model: 'json-success' }),
    { status: 'completed', final: 'Did the thing: café ✓ 🙂' },
  ],
  [
    'stream: false → JSON request and reply → completed',
    () => config({ stream: false }),
    { status: 'completed', final: 'Did the thing: café ✓ 🙂' },
  ],
  [
    '200 + content without sentinel → completed, final message ""',
    () => config({ model: 'sse-no-sentinel' }),
    { status: 'completed', final: '' },
  ],
  [
    'garbage frames are skipped; the good ones still make the reply',
    () => config({ model: 'garbage' }),
    { status: 'completed', final: 'survived garbage' },
  ],
];

describe('hermes-proxy against the fake proxy process', () => {
  it.each(ROWS)('%s', async (_name, makeConfig, want) => {
    const run = await runAdapter(hermesProxyAdapter, makeConfig());
    expectWellFormed(run);
    const done = terminalOf(run.events);
    const o = done.outcome;
    expect(o.status).toBe(want.status);
    if (want.raw instanceof RegExp) expect(o.raw).toMatch(want.raw);
    else if (want.raw) expect(o.raw).toBe(want.raw);
    if (want.messageHas) expect(o.message).toContain(want.messageHas);
    if (want.hintHas) expect(o.hint).toContain(want.hintHas);
    expect(o.timed_out).toBe(want.timed_out ?? false);
    if (want.retry_after_ms !== undefined) expect(o.retry_after_ms).toBe(want.retry_after_ms);
    if (want.final !== undefined) expect(done.final_message).toBe(want.final);
  });

  it('streams assistant text as runtime.message events and to runtime.stdout.log, with usage from the final frame', async () => {
    const run = await runAdapter(hermesProxyAdapter, config());
    const messages = run.events.filter(
      (e): e is Extract<RuntimeEventV1, { type: 'runtime.message' }> => e.type === 'runtime.message',
    );
    // (How many events depends on how the kernel coalesces the fake's 7-byte writes; the hung
    // stream test below shows text arriving before the stream ends.)
    const text = messages.map((m) => m.data.text).join('');
    expect(text).toBe('Plan: change nothing.\n\n```uh-runtime-final-message\nDid the thing: café ✓ 🙂\n```\n');
    expect(readFileSync(join(run.logDir, 'runtime.stdout.log'), 'utf8')).toBe(text);
    const usage = { input_tokens: 42, output_tokens: 17, total_tokens: 59, cached_input_tokens: 5 };
    expect(run.events.find((e) => e.type === 'runtime.usage')?.data).toEqual({ ...usage, cumulative: true });
    const done = terminalOf(run.events);
    expect(done.usage).toEqual(usage);
    expect(done.session_id).toBe('chatcmpl-fake-1');
    expect(done.final_message_source).toBe('sentinel');
  });

  it('sends the bearer, the extra headers and the OpenAI body to the proxy', async () => {
    await runAdapter(
      hermesProxyAdapter,
      config({ model: 'json-success', system_prompt: 'Be terse.', max_tokens: 99 }),
      { prompt: 'Do X.' },
    );
    const seen = (await fake.requests()).filter((r) => r.path === '/v1/chat/completions').at(-1)!;
    expect(seen.headers.authorization).toBe(`Bearer ${BEARER}`);
    expect(seen.headers['x-team-key']).toBe(TEAM_KEY);
    expect(JSON.parse(seen.body)).toEqual({
      model: 'json-success',
      messages: [
        { role: 'system', content: 'Be terse.' },
        { role: 'user', content: 'Do X.' },
      ],
      stream: true,
      temperature: 0,
      max_tokens: 99,
      stream_options: { include_usage: true },
    });
  });

  it('reports unparseable frames as runtime.raw events', async () => {
    const run = await runAdapter(hermesProxyAdapter, config({ model: 'garbage' }));
    const raws = run.events.filter((e) => e.type === 'runtime.raw').map((e) => e.data);
    expect(raws).toEqual([
      expect.objectContaining({ reason: 'invalid_json', line: 'this is not json' }),
      expect.objectContaining({ reason: 'unexpected_shape' }),
      expect.objectContaining({ reason: 'invalid_json' }),
    ]);
  });

  it('emits text while the stream is still open, then ends as cancelled when the run is cancelled', async () => {
    const controller = new AbortController();
    let sawTextBeforeCancel = false;
    const run = await runAdapter(hermesProxyAdapter, config({ model: 'hung' }), {
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === 'runtime.message' && e.data.text.includes('thinking')) {
          sawTextBeforeCancel = true;
          controller.abort({ kind: 'cancel', message: 'cancelled by test' });
        }
      },
    });
    expect(sawTextBeforeCancel).toBe(true);
    expect(terminalOf(run.events).outcome).toMatchObject({
      status: 'cancelled',
      timed_out: false,
      message: 'cancelled by test',
    });
    expectWellFormed(run);
  });

  it('keeps a bearer or header value echoed back by the upstream out of events and logs', async () => {
    for (const model of ['echo-secret', 'echo-secret-stream']) {
      const run = await runAdapter(hermesProxyAdapter, config({ model }));
      expectWellFormed(run);
      expect(everythingWritten(run)).toContain('[redacted]');
    }
  });

  it('describes the request for a dry run with the bearer and header values redacted', async () => {
    const parsed = hermesProxyAdapter.configSchema.parse(config({ endpoint: `${fake.url}/` }));
    const plan = await hermesProxyAdapter.prepare({
      config: parsed,
      prompt: 'Do X.',
      workDir: '/tmp',
      mission: { missionId: 'm', operationId: 'o' },
    });
    expect(plan.describe.command).toBe(`POST ${fake.url}/chat/completions`);
    expect(plan.describe.body).toBe(JSON.stringify(JSON.parse(plan.describe.body as string), null, 2));
    expect(plan.describe.headers).toMatchObject({ authorization: 'Bearer [redacted]', 'x-team-key': '[redacted]' });
    for (const secret of SECRETS) expect(JSON.stringify(plan.describe)).not.toContain(secret);
    expect(hermesProxyAdapter.secretsOf(parsed)).toEqual([BEARER, TEAM_KEY]);
  });
});
