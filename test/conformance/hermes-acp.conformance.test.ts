import { delimiter } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hermesAcpAdapter } from '../../src/workers/runtimes/hermes-acp/hermes-acp-adapter.js';
import { describeConformance } from './runtime-conformance.js';

// A fake `hermes` on PATH: the adapter runs its default command, `hermes acp`, unchanged.
const BIN = fileURLToPath(new URL('../fixtures/bin', import.meta.url));
const SECRET = 'sk-conformance-hermes-acp-51c0e9';

describeConformance('hermes-acp', {
  adapter: hermesAcpAdapter,
  successConfig: () => ({ env: { FAKE_ACP_SCENARIO: 'ok', OPENROUTER_API_KEY: SECRET } }),
  hangingConfig: () => ({ env: { FAKE_ACP_SCENARIO: 'hang', OPENROUTER_API_KEY: SECRET }, kill_grace_ms: 500 }),
  secrets: [SECRET],
  env: () => ({ PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}` }),
});
