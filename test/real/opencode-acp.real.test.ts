/**
 * The generic `acp` runtime against a REAL agent: opencode (`opencode acp`, npm `opencode-ai`,
 * pinned in test/real/runtimes), its OpenAI-compatible provider pointed at our scripted
 * chat-completions server. Its config comes whole from `OPENCODE_CONFIG_CONTENT`; its home, data
 * and cache dirs are temp dirs; update checks, models.dev fetches, default plugins and LSP
 * downloads are off; `permission.edit: ask` makes it ask us before each edit.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acpAdapter } from '../../src/workers/runtimes/acp/acp-adapter.js';
import { startChatServer, type ChatServer } from '../support/chat-server.js';
import { git, makeRepo } from '../support/git-repo.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { tempDir } from '../support/temp.js';
import { ofType } from '../workers/runtimes/acp/fake-acp.js';
import { cancelOnceModelCalled } from './real-acp.js';

const OPENCODE = realRuntimeBinary('opencode');
const API_KEY = 'sk-opencode-test-7d2b9c41';
let server: ChatServer;

beforeAll(async () => {
  server = await startChatServer();
});
afterAll(async () => {
  await server?.close();
});

/** The recipe of docs/runtimes/acp.md: argv, env (config inline), isolated dirs. */
function opencodeRuntime(root: string) {
  const config = {
    $schema: 'https://opencode.ai/config.json',
    autoupdate: false,
    share: 'disabled',
    model: 'uhmock/scripted-model',
    // Session titles come from the small model: a provider nobody listens on, so a title request
    // fails at once instead of taking a step of the scripted conversation.
    small_model: 'uhtitle/title-model',
    provider: {
      uhmock: {
        npm: '@ai-sdk/openai-compatible',
        name: 'uh scripted model',
        options: { baseURL: server.url, apiKey: '{env:UH_MOCK_API_KEY}', maxRetries: 0 },
        models: { 'scripted-model': { name: 'scripted-model', tool_call: true } },
      },
      uhtitle: {
        npm: '@ai-sdk/openai-compatible',
        name: 'no title model',
        options: { baseURL: 'http://127.0.0.1:9/v1', apiKey: 'none', maxRetries: 0 },
        models: { 'title-model': { name: 'title-model' } },
      },
    },
    permission: { edit: 'ask', bash: 'ask', webfetch: 'deny' },
  };
  const dirs = {
    HOME: join(root, 'home'),
    XDG_CONFIG_HOME: join(root, 'config'),
    XDG_DATA_HOME: join(root, 'data'),
    XDG_CACHE_HOME: join(root, 'cache'),
    XDG_STATE_HOME: join(root, 'state'),
  };
  return {
    command: [OPENCODE, 'acp'],
    env: {
      ...dirs,
      UH_MOCK_API_KEY: API_KEY,
      OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_SHARE: '1',
      OPENCODE_DISABLE_CLAUDE_CODE: '1',
    },
    request_timeout_ms: 60_000,
    turn_timeout_ms: 90_000,
    cancel_grace_ms: 10_000,
    idle_ms: 300_000,
  };
}

// opencode takes 15-40 s to start on a loaded 2-core machine: the tests share one work dir and one
// config, so the pooled child (`idle_ms`) serves them all; a failed run poisons it and the next
// run starts a fresh one.
const root = tempDir('uh-opencode-');
const shared = { root, workDir: makeRepo({ 'README.md': '# opencode\n' }, join(root, 'work')) };
const fresh = () => shared;
const SLOW = 240_000;
afterAll(async () => {
  await acpAdapter.pool.closeAll();
});

describe('acp runtime against opencode acp (real agent, scripted model)', () => {
  it(
    'edits a file in the work dir after a permission request, usage read',
    async () => {
      const { root, workDir } = fresh();
      await server.script(
        [
          {
            kind: 'tool_calls',
            calls: [
              {
                id: 'call_w1',
                name: 'write',
                arguments: { filePath: join(workDir, 'hello.txt'), content: 'hello from opencode\n' },
              },
            ],
            usage: { prompt_tokens: 50, completion_tokens: 9 },
          },
          { kind: 'text', text: 'Wrote hello.txt.', usage: { prompt_tokens: 60, completion_tokens: 4 } },
        ],
        API_KEY,
      );
      const r = await runAdapter(acpAdapter, opencodeRuntime(root), {
        workDir,
        prompt: 'Create hello.txt saying hello.',
      });
      const t = terminalOf(r.events);
      expect(t.outcome).toMatchObject({ status: 'completed', raw: 'stop:end_turn' });
      expect(ofType(r.events, 'runtime.started')[0]?.data.agent).toMatchObject({
        name: 'OpenCode',
        version: '1.18.33',
      });
      const decided = ofType(r.events, 'runtime.permission').find((e) => e.data.answer !== null);
      expect(decided?.data).toMatchObject({
        allowed: true,
        request: { kind: 'edit', paths: [join(workDir, 'hello.txt')] },
      });
      expect(readFileSync(join(workDir, 'hello.txt'), 'utf8')).toBe('hello from opencode\n');
      expect(git(workDir, 'status', '--porcelain', '--untracked-files=all')).toBe('?? hello.txt');
      expect(t.final_message).toBe('Wrote hello.txt.');
      expect(t.usage?.input_tokens).toBeGreaterThan(0);
      expect(JSON.stringify(r.events)).not.toContain(API_KEY);
      const calls = await server.requests();
      expect(calls.map((c) => c.tool_results.length)).toEqual([0, 1]);
    },
    SLOW,
  );

  it(
    'cancels a turn waiting on the model',
    async () => {
      const { root, workDir } = fresh();
      await server.script([{ kind: 'hang' }], API_KEY);
      const r = await runAdapter(acpAdapter, opencodeRuntime(root), {
        workDir,
        ...cancelOnceModelCalled(() => server.requests()),
      });
      expect(terminalOf(r.events).outcome).toMatchObject({ status: 'cancelled', raw: 'cancel' });
      expect(terminalOf(r.events).stop_reason).toBe('cancelled'); // opencode answered session/cancel
    },
    SLOW,
  );

  // A 401 is not retried by opencode: it answers the prompt -32603 "Incorrect API key provided."
  // at once.
  it(
    'a provider 401 (wrong API key) ends blocked with a hint to fix the credentials',
    async () => {
      const { root, workDir } = fresh();
      await server.script([], 'the-right-key');
      const r = await runAdapter(acpAdapter, opencodeRuntime(root), { workDir });
      const outcome = terminalOf(r.events).outcome;
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'blocked', raw: 'auth_failed' });
      expect(outcome.hint).toMatch(/opencode credentials were refused/);
      expect(JSON.stringify(r.events)).not.toContain(API_KEY);
    },
    SLOW,
  );

  // opencode 1.18.33 retries every HTTP 429 in its session loop (SessionRetry: up to 5 retries,
  // whatever the provider's maxRetries says, nothing said to the ACP client meanwhile), waiting
  // what the response's `retry-after-ms` / `retry-after` header says. Azure OpenAI's shape: its
  // short-window rate limit answers 429 with `retry-after-ms: 1000`, so the five retries take
  // about 5 s and opencode then answers the prompt with the provider's message.
  it(
    'a provider 429 (Azure OpenAI rate limit, retry-after-ms) ends blocked as rate limited, in seconds',
    async () => {
      const { root, workDir } = fresh();
      const step = {
        kind: 'error' as const,
        status: 429,
        headers: { 'retry-after': '1', 'retry-after-ms': '1000' },
        body: {
          error: {
            code: '429',
            message:
              'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 1 second. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.',
          },
        },
      };
      await server.script(
        Array.from({ length: 8 }, () => step),
        API_KEY,
      );
      let started = 0;
      const onEvent = (e: { type: string }) => void (e.type === 'runtime.started' && (started = Date.now()));
      const r = await runAdapter(acpAdapter, opencodeRuntime(root), { workDir, onEvent });
      const turnMs = Date.now() - started;
      const outcome = terminalOf(r.events).outcome;
      // Azure's message links aka.ms/oai/quotaincrease: still a rate limit, not an exhausted quota.
      expect(outcome, JSON.stringify(outcome)).toMatchObject({ status: 'blocked', raw: 'rate_limited' });
      expect(outcome.message).toContain('exceeded call rate limit');
      expect(outcome.hint).toMatch(/opencode provider is rate limiting/);
      expect(await server.requests()).toHaveLength(6); // the first request and opencode's 5 retries
      // The turn lasts opencode's five retry-after waits (5 × 1 s), not its exponential backoff.
      expect(started).toBeGreaterThan(0);
      expect(turnMs, `turn took ${turnMs} ms`).toBeGreaterThanOrEqual(5_000);
      expect(turnMs, `turn took ${turnMs} ms`).toBeLessThan(30_000);
    },
    SLOW,
  );
});
