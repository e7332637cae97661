import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnGroup } from '../../../../src/shared/process/spawn-group.js';
import { acpAdapter } from '../../../../src/workers/runtimes/acp/acp-adapter.js';
import { hermesAcpAdapter } from '../../../../src/workers/runtimes/hermes-acp/hermes-acp-adapter.js';
import { FIXTURE_BIN, fakeCommand } from './fake-acp.js';

const ctx = (env: Record<string, string | undefined> = {}) => ({
  spawn: spawnGroup,
  fetch: globalThis.fetch,
  now: Date.now,
  env: { ...process.env, ...env },
});
const EXAMPLE_AGENT = join(
  fileURLToPath(new URL('../../../../node_modules/@agentclientprotocol/sdk', import.meta.url)),
  'dist',
  'examples',
  'agent.js',
);

describe('uh adapter check for ACP runtimes (starts the agent, initialize, closes it)', () => {
  it('reports the agent, its capabilities and auth methods', async () => {
    const result = await acpAdapter.check(acpAdapter.configSchema.parse({ command: fakeCommand('ok') }), ctx());
    expect(result.ok).toBe(true);
    expect(result.summary).toContain('hermes-agent 0.0.0-fake');
    expect(result.summary).toContain('loadSession yes, auth: openrouter, hermes-setup (terminal)');
    expect(result.version).toBe('0.0.0-fake');
  });

  it('works against the real SDK example agent', async () => {
    const result = await acpAdapter.check(
      acpAdapter.configSchema.parse({ command: [process.execPath, EXAMPLE_AGENT] }),
      ctx(),
    );
    expect(result).toMatchObject({ ok: true, details: { protocol_version: 1, load_session: false, auth_methods: [] } });
  });

  it('hermes-acp: finds `hermes` on PATH, and flags a Hermes that is not logged in', async () => {
    const path = { PATH: `${FIXTURE_BIN}${delimiter}${process.env.PATH ?? ''}` };
    const good = await hermesAcpAdapter.check(
      hermesAcpAdapter.configSchema.parse({ env: { FAKE_ACP_SCENARIO: 'ok' } }),
      ctx(path),
    );
    expect(good.ok).toBe(true);
    const notLoggedIn = await hermesAcpAdapter.check(
      hermesAcpAdapter.configSchema.parse({ env: { FAKE_ACP_SCENARIO: 'auth-terminal-only' } }),
      ctx(path),
    );
    expect(notLoggedIn).toMatchObject({ ok: false, errors: [expect.stringContaining('only terminal auth methods')] });
    expect(notLoggedIn.hint).toContain('hermes setup');
  });

  it('fails (never throws) for a program that does not speak ACP', async () => {
    const silent = await acpAdapter.check(
      acpAdapter.configSchema.parse({ command: fakeCommand('no-init'), request_timeout_ms: 300 }),
      ctx(),
    );
    expect(silent).toMatchObject({ ok: false, summary: expect.stringContaining('did not answer initialize') });
    const crashes = await acpAdapter.check(
      acpAdapter.configSchema.parse({
        command: [process.execPath, '-e', 'console.error("bad flag --acp"); process.exit(2)'],
      }),
      ctx(),
    );
    expect(crashes.ok).toBe(false);
    expect(crashes.errors.join(' ')).toContain('bad flag --acp');
  });
});
