import { fileURLToPath } from 'node:url';
import { piAdapter } from '../../src/workers/runtimes/pi/pi-adapter.js';
import { describeConformance } from './runtime-conformance.js';

const FAKE_PI = fileURLToPath(new URL('../fixtures/bin/fake-pi.mjs', import.meta.url));
const SECRET = 'sk-conformance-pi-71b0d3';

describeConformance('pi', {
  adapter: piAdapter,
  successConfig: () => ({ binary: FAKE_PI, env: { UH_FAKE_SCENARIO: 'success', OPENAI_API_KEY: SECRET } }),
  hangingConfig: () => ({
    binary: FAKE_PI,
    env: { UH_FAKE_SCENARIO: 'hang', OPENAI_API_KEY: SECRET },
    kill_grace_ms: 500,
  }),
  secrets: [SECRET],
});
