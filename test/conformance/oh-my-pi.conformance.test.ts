/**
 * oh-my-pi (`omp`) through the conformance suite: the pi implementation under its own
 * registration (the `omp` binary, the prompt as the last argument), against the fake omp.
 */
import { fileURLToPath } from 'node:url';
import { ohMyPiAdapter } from '../../src/workers/runtimes/oh-my-pi/oh-my-pi-adapter.js';
import { describeConformance } from './runtime-conformance.js';

const FAKE_OMP = fileURLToPath(new URL('../fixtures/bin/fake-omp.mjs', import.meta.url));
const SECRET = 'sk-conformance-omp-5c2e91';

describeConformance('oh-my-pi', {
  adapter: ohMyPiAdapter,
  successConfig: () => ({ binary: FAKE_OMP, env: { UH_FAKE_SCENARIO: 'success', ANTHROPIC_API_KEY: SECRET } }),
  hangingConfig: () => ({
    binary: FAKE_OMP,
    env: { UH_FAKE_SCENARIO: 'hang', ANTHROPIC_API_KEY: SECRET },
    kill_grace_ms: 500,
  }),
  secrets: [SECRET],
});
