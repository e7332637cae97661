import { fileURLToPath } from 'node:url';
import { commandAdapter } from '../../src/workers/runtimes/command/command-adapter.js';
import { describeConformance } from './runtime-conformance.js';

const FAKE = fileURLToPath(new URL('../fixtures/bin/fake-agent.mjs', import.meta.url));
const SECRET = 'sk-conformance-command-4f9a2c';

describeConformance('command', {
  adapter: commandAdapter,
  successConfig: () => ({ argv: [process.execPath, FAKE, 'edit', 'hello.txt', 'hi'], env: { FAKE_API_KEY: SECRET } }),
  hangingConfig: () => ({ argv: [process.execPath, FAKE, 'hang'], env: { FAKE_API_KEY: SECRET }, kill_grace_ms: 500 }),
  secrets: [SECRET],
});
