/**
 * The opencode recipe of docs/runtimes/acp.md through `uh mission run` under bubblewrap:
 * `XDG_DATA_HOME` in the runtime's `env` (here under /var/tmp, for /var/lib/uh/opencode) holds its
 * session database; under isolation opencode writes a per-operation copy of it (a read-only data
 * dir was EROFS on `mkdir`), and the configured dir is never written. Real agent, scripted model
 * (test/fixtures/model-server/chat-server.mjs).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { treeFingerprint } from '../security/isolation-helpers.js';
import { startChatServer, type ChatServer } from '../support/chat-server.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { hostTempDir, removeDir } from '../support/temp.js';
import { acpMissionRun } from './real-acp.js';

const OPENCODE = realRuntimeBinary('opencode');
const API_KEY = 'sk-opencode-mission-5e8a1c90';
let server: ChatServer;
const created: string[] = [];

beforeAll(async () => {
  server = await startChatServer();
});
afterAll(async () => {
  await server?.close();
  created.forEach(removeDir);
});

/** The recipe's runtime_config, its provider at the scripted server. */
function opencodeRecipe(dataHome: string) {
  const config = {
    autoupdate: false,
    share: 'disabled',
    model: 'mine/my-model',
    small_model: 'title/none',
    provider: {
      mine: {
        npm: '@ai-sdk/openai-compatible',
        options: { baseURL: server.url, apiKey: '{env:MY_API_KEY}', maxRetries: 0 },
        models: { 'my-model': { tool_call: true } },
      },
      title: {
        npm: '@ai-sdk/openai-compatible',
        options: { baseURL: 'http://127.0.0.1:9/v1', apiKey: 'none', maxRetries: 0 },
        models: { none: {} },
      },
    },
    permission: { edit: 'ask', bash: 'ask', webfetch: 'deny' },
  };
  return {
    command: [OPENCODE, 'acp'],
    env: {
      OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
      MY_API_KEY: API_KEY,
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_SHARE: '1',
      XDG_DATA_HOME: dataHome,
    },
    request_timeout_ms: 90_000,
  };
}

describe('opencode acp through uh mission run under bwrap (docs/runtimes/acp.md recipe)', () => {
  it('runs with XDG_DATA_HOME seeded into a writable copy; the configured dir is untouched', async () => {
    await server.script(
      [{ kind: 'text', text: 'Nothing to change.', usage: { prompt_tokens: 30, completion_tokens: 4 } }],
      API_KEY,
    );
    const dataHome = hostTempDir('uh-opencode-data-');
    created.push(dataHome);
    const before = treeFingerprint(dataHome);
    const r = await acpMissionRun(opencodeRecipe(dataHome), created);
    expect(r.receipt.isolation.kind).toBe('bwrap');
    expect(r.receipt.status, JSON.stringify(r.receipt.outcome)).toBe('completed');
    expect(r.code).toBe(0);
    expect(r.receipt.final_message).toContain('Nothing to change.');
    expect(treeFingerprint(dataHome)).toBe(before);
    expect(r.stdout).not.toContain(API_KEY);
  }, 200_000);
});
