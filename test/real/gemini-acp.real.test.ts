/**
 * The generic `acp` runtime against a REAL agent: Gemini CLI (`gemini --acp`, npm
 * `@google/gemini-cli`, pinned in test/real/runtimes), with GOOGLE_GEMINI_BASE_URL at our scripted
 * Gemini API server (test/fixtures/gemini-server). Its settings live in a temp HOME
 * (`~/.gemini/settings.json`): API-key auth, one attempt per model call (no retries), no update
 * checks, no telemetry.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acpAdapter } from '../../src/workers/runtimes/acp/acp-adapter.js';
import { startGeminiServer, type GeminiServer } from '../support/gemini-server.js';
import { git, makeRepo } from '../support/git-repo.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { tempDir } from '../support/temp.js';
import { ofType } from '../workers/runtimes/acp/fake-acp.js';
import { cancelOnceModelCalled } from './real-acp.js';

const GEMINI = realRuntimeBinary('gemini');
const API_KEY = 'AIzaScriptedTestKey-0123456789abcdef';
let server: GeminiServer;

beforeAll(async () => {
  server = await startGeminiServer();
});
afterAll(async () => {
  await server?.close();
});

/** The recipe of docs/runtimes/acp.md: settings file, argv, env. */
function geminiRuntime(root: string) {
  const home = join(root, 'home');
  mkdirSync(join(home, '.gemini'), { recursive: true });
  const settings = {
    security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
    general: { disableAutoUpdate: true, disableUpdateNag: true, maxAttempts: 1, retryFetchErrors: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    model: { name: 'gemini-2.5-flash' },
  };
  writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify(settings));
  return {
    command: [GEMINI, '--acp'],
    env: { HOME: home, GEMINI_API_KEY: API_KEY, GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_CLI_NO_RELAUNCH: 'true' },
    auth_method_id: 'gemini-api-key',
    request_timeout_ms: 60_000,
    turn_timeout_ms: 90_000,
    cancel_grace_ms: 10_000,
  };
}

function fresh() {
  const root = tempDir('uh-gemini-');
  return { root, workDir: makeRepo({ 'README.md': '# gemini\n' }, join(root, 'work')) };
}

describe('acp runtime against gemini --acp (real agent, scripted model)', () => {
  it('edits a file in the work dir after a permission request; usage read from the answer _meta', async () => {
    const { root, workDir } = fresh();
    await server.script(
      [
        {
          kind: 'function_calls',
          calls: [
            { name: 'write_file', args: { file_path: join(workDir, 'hello.txt'), content: 'hello from gemini\n' } },
          ],
          usage: { promptTokenCount: 50, candidatesTokenCount: 9 },
        },
        { kind: 'text', text: 'Wrote hello.txt.', usage: { promptTokenCount: 60, candidatesTokenCount: 4 } },
      ],
      API_KEY,
    );
    const r = await runAdapter(acpAdapter, geminiRuntime(root), { workDir, prompt: 'Create hello.txt saying hello.' });
    const t = terminalOf(r.events);
    expect(t.outcome).toMatchObject({ status: 'completed', raw: 'stop:end_turn' });
    const decided = ofType(r.events, 'runtime.permission').find((e) => e.data.answer !== null);
    expect(decided?.data).toMatchObject({
      allowed: true,
      answer: { outcome: { outcome: 'selected', optionId: 'proceed_once' } },
      request: { kind: 'edit' },
    });
    expect(readFileSync(join(workDir, 'hello.txt'), 'utf8')).toBe('hello from gemini\n');
    expect(git(workDir, 'status', '--porcelain', '--untracked-files=all')).toBe('?? hello.txt');
    expect(t.final_message).toBe('Wrote hello.txt.');
    expect(t.usage).toMatchObject({ input_tokens: 110, output_tokens: 13 });
    expect(JSON.stringify(r.events)).not.toContain(API_KEY);
    expect((await server.requests()).filter((c) => c.stream).map((c) => c.function_responses)).toEqual([
      [],
      ['write_file'],
    ]);
  });

  it('cancels a turn waiting on the model', async () => {
    const { root, workDir } = fresh();
    await server.script([{ kind: 'hang' }], API_KEY);
    const r = await runAdapter(acpAdapter, geminiRuntime(root), {
      workDir,
      ...cancelOnceModelCalled(async () => (await server.requests()).filter((c) => c.stream)),
    });
    expect(terminalOf(r.events).outcome).toMatchObject({ status: 'cancelled', raw: 'cancel' });
    expect(terminalOf(r.events).stop_reason).toBe('cancelled'); // gemini answered session/cancel
  });

  it.each([
    ['401 UNAUTHENTICATED (wrong API key)', 'the-right-key', [], 'auth_failed'],
    [
      '429 RESOURCE_EXHAUSTED',
      API_KEY,
      [
        {
          kind: 'error',
          status: 429,
          body: {
            error: {
              code: 429,
              message: 'Resource has been exhausted (e.g. check quota).',
              status: 'RESOURCE_EXHAUSTED',
            },
          },
        },
      ],
      'rate_limited',
    ],
  ] as const)('a provider %s ends blocked, in seconds', async (_name, key, steps, raw) => {
    const { root, workDir } = fresh();
    await server.script([...steps] as never, key);
    const started = Date.now();
    const r = await runAdapter(acpAdapter, geminiRuntime(root), { workDir });
    const outcome = terminalOf(r.events).outcome;
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'blocked', raw });
    expect(outcome.hint).toBeTruthy();
    expect(Date.now() - started).toBeLessThan(45_000);
    expect(JSON.stringify(r.events)).not.toContain(API_KEY);
  });
});
