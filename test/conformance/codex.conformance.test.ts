import { fileURLToPath } from 'node:url';
import { codexAdapter } from '../../src/workers/runtimes/codex/codex-adapter.js';
import { describeConformance } from './runtime-conformance.js';

const FAKE = fileURLToPath(new URL('../fixtures/bin/fake-codex', import.meta.url));
const SECRET = 'sk-conformance-codex-7d1e93';

describeConformance('codex', {
  adapter: codexAdapter,
  successConfig: () => ({ binary: FAKE, env: { OPENAI_API_KEY: SECRET, FAKE_CODEX_SCENARIO: 'success' } }),
  hangingConfig: () => ({
    binary: FAKE,
    env: { OPENAI_API_KEY: SECRET, FAKE_CODEX_SCENARIO: 'hang' },
    kill_grace_ms: 500,
  }),
  secrets: [SECRET],
});
