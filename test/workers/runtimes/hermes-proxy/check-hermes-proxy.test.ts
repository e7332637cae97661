/** `uh adapter check hermes-proxy`: one row per row of the spec's "Adapter check" table, against the fake proxy process. */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdapterCheckV1 } from '../../../../src/shared/runtime/v1/index.js';
import { hermesProxyAdapter } from '../../../../src/workers/runtimes/hermes-proxy/hermes-proxy-adapter.js';
import {
  checkHermesProxy,
  HERMES_PROXY_CHECK_TIMEOUT_MS,
} from '../../../../src/workers/runtimes/hermes-proxy/check-hermes-proxy.js';
import {
  HermesProxySettingsSchema,
  type HermesProxySettings,
} from '../../../../src/workers/runtimes/hermes-proxy/hermes-proxy-settings.js';
import { spawnGroup } from '../../../../src/shared/process/spawn-group.js';
import { startFakeProxy, type FakeProxy } from '../../../fixtures/fake-hermes-proxy/start-fake-proxy.js';

const BEARER = 'sk-check-bearer-31f0';
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

const ctx = { spawn: spawnGroup, fetch: globalThis.fetch, now: Date.now, env: process.env };
const settings = (patch: Record<string, unknown>): HermesProxySettings =>
  HermesProxySettingsSchema.parse({ model: 'hermes-4-405b', auth_token: BEARER, ...patch });

interface Want {
  ok: boolean;
  summaryHas: string;
  hintHas?: string;
  state?: string;
}
type Row = [string, () => HermesProxySettings, Want, number?];

const ROWS: Row[] = [
  [
    '200 + {data:[…]} → found, "proxy reachable at … (N models available)"',
    () => settings({ endpoint: fake.url }),
    { ok: true, summaryHas: `proxy reachable at ${'<url>'} (3 models available)`, state: 'ready' },
  ],
  [
    '401 upstream_auth_failed → not found, "configured but locked", re-auth hint',
    () => settings({ endpoint: fake.scenarioUrl('models-locked'), provider: 'nous' }),
    {
      ok: false,
      summaryHas: 'configured but locked: upstream logged out',
      hintHas: 'hermes auth status nous',
      state: 'locked',
    },
  ],
  [
    '403 → not found, re-auth hint with the provider',
    () => settings({ endpoint: fake.scenarioUrl('models-forbidden'), provider: 'claude' }),
    { ok: false, summaryHas: 'refused the request (HTTP 403)', hintHas: 'hermes auth status claude', state: 'refused' },
  ],
  [
    '404 → not found, "proxy version may not forward /models"',
    () => settings({ endpoint: fake.scenarioUrl('models-404') }),
    { ok: false, summaryHas: 'proxy version may not forward /models' },
  ],
  [
    'ECONNREFUSED → not found, "endpoint unreachable … hermes proxy start"',
    () => settings({ endpoint: closedPortUrl }),
    {
      ok: false,
      summaryHas: `endpoint unreachable: <closed> (is "hermes proxy start" running?)`,
      hintHas: 'hermes proxy start',
    },
  ],
  [
    'timeout → not found, "adapter check timed out after N ms"',
    () => settings({ endpoint: fake.scenarioUrl('models-hang') }),
    { ok: false, summaryHas: 'adapter check timed out after 300 ms' },
    300,
  ],
  [
    'other HTTP error → not found, envelope verbatim',
    () => settings({ endpoint: fake.scenarioUrl('models-500') }),
    { ok: false, summaryHas: 'answered HTTP 500: server_error: upstream exploded' },
  ],
  [
    '200 with a body that is not a model list → not found',
    () => settings({ endpoint: fake.scenarioUrl('models-garbage') }),
    { ok: false, summaryHas: 'unexpected body' },
  ],
  [
    'missing endpoint in runtime_config → not found',
    () => ({ ...settings({}), endpoint: undefined }) as unknown as HermesProxySettings,
    { ok: false, summaryHas: 'missing endpoint in runtime_config' },
  ],
];

describe('hermes-proxy check', () => {
  it.each(ROWS)('%s', async (_name, makeSettings, want, budget) => {
    const config = makeSettings();
    const result: AdapterCheckV1 =
      budget === undefined ? await hermesProxyAdapter.check(config, ctx) : await checkHermesProxy(config, {}, budget);
    const summary = want.summaryHas.replace('<url>', fake.url).replace('<closed>', closedPortUrl);
    expect(result.ok).toBe(want.ok);
    expect(result.summary).toContain(summary);
    if (!want.ok) expect(result.errors.length).toBe(1);
    if (want.hintHas) expect(result.hint).toContain(want.hintHas);
    if (want.state) expect(result.details?.state).toBe(want.state);
    expect(JSON.stringify(result)).not.toContain(BEARER);
  });

  it('lists the models and says when the configured one is missing', async () => {
    const listed = await hermesProxyAdapter.check(settings({ endpoint: fake.url }), ctx);
    expect(listed.details).toMatchObject({
      models: ['hermes-4-405b', 'hermes-4-70b', 'anthropic/claude-opus-4.7'],
      model_listed: true,
    });
    const missing = await hermesProxyAdapter.check(settings({ endpoint: fake.url, model: 'gpt-9' }), ctx);
    expect(missing.ok).toBe(true);
    expect(missing.hint).toContain('model "gpt-9" is not in the proxy\'s list');
  });

  it('has a fixed 5-second budget, apart from request_timeout_ms', () => {
    expect(HERMES_PROXY_CHECK_TIMEOUT_MS).toBe(5000);
  });
});
