import { fileURLToPath } from 'node:url';
import { hermesAdapter } from '../../src/workers/runtimes/hermes/hermes-adapter.js';
import { describeConformance } from './runtime-conformance.js';

const FAKE = fileURLToPath(new URL('../fixtures/bin/fake-hermes.mjs', import.meta.url));
const SECRET = 'sk-conformance-hermes-0e93f2';

describeConformance('hermes (stream-json)', {
  adapter: hermesAdapter,
  successConfig: () => ({ binary: FAKE, env: { UH_FAKE_SCENARIO: 'success', OPENROUTER_API_KEY: SECRET } }),
  hangingConfig: () => ({
    binary: FAKE,
    env: { UH_FAKE_SCENARIO: 'hang', OPENROUTER_API_KEY: SECRET },
    kill_grace_ms: 500,
  }),
  secrets: [SECRET],
});

// Quiet text mode, forced by config (the fake binary also offers stream-json).
describeConformance('hermes (text)', {
  adapter: hermesAdapter,
  successConfig: () => ({
    binary: FAKE,
    format: 'text',
    prompt_via: 'argv',
    env: { UH_FAKE_SCENARIO: 'success', OPENROUTER_API_KEY: SECRET },
  }),
  hangingConfig: () => ({
    binary: FAKE,
    format: 'text',
    prompt_via: 'argv',
    env: { UH_FAKE_SCENARIO: 'hang', OPENROUTER_API_KEY: SECRET },
    kill_grace_ms: 500,
  }),
  secrets: [SECRET],
});
