import { hermesProxyAdapter } from '../../src/workers/runtimes/hermes-proxy/hermes-proxy-adapter.js';
import { startFakeProxy, type FakeProxy } from '../fixtures/fake-hermes-proxy/start-fake-proxy.js';
import { describeConformance } from './runtime-conformance.js';

const BEARER = 'sk-conformance-hermes-proxy-8d21';
const HEADER_SECRET = 'hdr-conformance-hermes-proxy-5e0b';
let fake: FakeProxy | undefined;

const base = () => ({ endpoint: fake!.url, auth_token: BEARER, extra_headers: { 'x-team-key': HEADER_SECRET } });

// The model replies with text only (no tool channel in v1), so the successful run leaves the
// work dir unchanged; the hanging run is the fake's hung stream.
describeConformance('hermes-proxy', {
  adapter: hermesProxyAdapter,
  successConfig: () => ({ ...base(), model: 'sse-success' }),
  hangingConfig: () => ({ ...base(), model: 'hung' }),
  secrets: [BEARER, HEADER_SECRET],
  setup: async () => {
    fake = await startFakeProxy('sse-success');
  },
  teardown: async () => fake?.close(),
});
