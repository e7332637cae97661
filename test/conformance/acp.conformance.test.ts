import { fileURLToPath } from 'node:url';
import { acpAdapter } from '../../src/workers/runtimes/acp/acp-adapter.js';
import { describeConformance } from './runtime-conformance.js';

const AGENT = fileURLToPath(new URL('../fixtures/fake-acp-agent/agent.mjs', import.meta.url));
const SECRET = 'sk-conformance-acp-8e1d7b';

describeConformance('acp', {
  adapter: acpAdapter,
  successConfig: () => ({ command: [process.execPath, AGENT, 'ok'], env: { FAKE_API_KEY: SECRET } }),
  hangingConfig: () => ({
    command: [process.execPath, AGENT, 'hang'],
    env: { FAKE_API_KEY: SECRET },
    kill_grace_ms: 500,
  }),
  secrets: [SECRET],
});
