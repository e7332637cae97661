/**
 * The Gemini CLI recipe of docs/runtimes/acp.md through `uh mission run` under bubblewrap: `HOME`
 * in the runtime's `env` names the agent's configured home (here under /var/tmp, for
 * /var/lib/uh/gemini-home), seeded into the operation's own writable copy (Gemini writes
 * `~/.gemini/projects.json` and its tmp dir at start; a read-only home was EROFS). The configured
 * home is never written. Real agent, scripted model (test/fixtures/gemini-server).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { treeFingerprint } from '../security/isolation-helpers.js';
import { startGeminiServer, type GeminiServer } from '../support/gemini-server.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { hostTempDir, removeDir } from '../support/temp.js';
import { acpMissionRun } from './real-acp.js';

const GEMINI = realRuntimeBinary('gemini');
const API_KEY = 'AIzaScriptedMissionKey-0123456789abcdef';
let server: GeminiServer;
const created: string[] = [];

beforeAll(async () => {
  server = await startGeminiServer();
});
afterAll(async () => {
  await server?.close();
  created.forEach(removeDir);
});

/** `$HOME/.gemini/settings.json` exactly as the recipe says. */
function geminiHome(): string {
  const home = hostTempDir('uh-gemini-home-');
  created.push(home);
  mkdirSync(join(home, '.gemini'));
  const settings = {
    security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
    general: { disableAutoUpdate: true, disableUpdateNag: true, maxAttempts: 1, retryFetchErrors: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    model: { name: 'gemini-2.5-flash' },
  };
  writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify(settings));
  return home;
}

describe('gemini --acp through uh mission run under bwrap (docs/runtimes/acp.md recipe)', () => {
  it('runs with its configured HOME seeded into a writable copy; the configured home is untouched', async () => {
    await server.script(
      [{ kind: 'text', text: 'Nothing to change.', usage: { promptTokenCount: 40, candidatesTokenCount: 4 } }],
      API_KEY,
    );
    const home = geminiHome();
    const before = treeFingerprint(home);
    const acp = {
      command: [GEMINI, '--acp'],
      env: { HOME: home, GEMINI_API_KEY: API_KEY, GOOGLE_GEMINI_BASE_URL: server.url },
      auth_method_id: 'gemini-api-key',
      request_timeout_ms: 60_000,
    };
    const r = await acpMissionRun(acp, created);
    const { receipt } = r;
    expect(receipt.isolation.kind).toBe('bwrap');
    expect(receipt.status, JSON.stringify(receipt.outcome)).toBe('completed');
    expect(r.code).toBe(0);
    expect(receipt.final_message).toContain('Nothing to change.');
    expect(treeFingerprint(home)).toBe(before);
    expect(r.stdout).not.toContain(API_KEY);
  }, 180_000);
});
