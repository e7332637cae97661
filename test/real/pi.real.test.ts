/**
 * The REAL pi coding agent (@mariozechner/pi-coding-agent, pinned, installed by
 * scripts/install-real-runtimes.sh) against our scripted Chat Completions server on 127.0.0.1,
 * through a custom provider in an isolated HOME's ~/.pi/agent/models.json. Never skipped: a
 * missing binary fails every test with the install command (resolved per test).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { piAdapter } from '../../src/workers/runtimes/pi/pi-adapter.js';
import { foldRuntimeEvents } from '../../src/shared/runtime/fold-events.js';
import { spawnGroup } from '../../src/shared/process/spawn-group.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { startChatServer, type ChatServer } from '../support/chat-server.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { git } from '../support/git-repo.js';
import { waitGroupGone } from '../support/process-group.js';
import { removeDir, tempDir } from '../support/temp.js';

const API_KEY = 'sk-uh-real-pi-3d9a7c51';
const SENTINEL_TEXT = 'Created hello.txt and retitled README.md.';
let server: ChatServer;
let home: string;
const roots: string[] = [];

beforeAll(async () => {
  server = await startChatServer();
  home = tempDir('uh-pi-home-');
  const agentDir = join(home, '.pi', 'agent');
  mkdirSync(agentDir, { recursive: true });
  // `apiKey` names an environment variable: the key itself stays out of the file.
  writeFileSync(
    join(agentDir, 'models.json'),
    JSON.stringify({
      providers: {
        uhmock: {
          baseUrl: server.url,
          api: 'openai-completions',
          apiKey: 'UH_MOCK_API_KEY',
          models: [{ id: 'uh-scripted', name: 'uh scripted model' }],
        },
      },
    }),
  );
  // Fail fast against a scripted error: no agent-level or SDK-level retries.
  writeFileSync(
    join(agentDir, 'settings.json'),
    JSON.stringify({ retry: { enabled: false, provider: { maxRetries: 0 } } }),
  );
});

afterAll(async () => {
  await server?.close();
  if (home) removeDir(home);
  roots.forEach(removeDir);
});

async function runReal(key = API_KEY, options: Parameters<typeof runAdapter>[2] = {}) {
  const run = await runAdapter(
    piAdapter,
    { binary: realRuntimeBinary('pi'), provider: 'uhmock', model: 'uh-scripted', env: { UH_MOCK_API_KEY: key } },
    {
      env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' },
      prompt: 'Create hello.txt and retitle README.md.',
      ...options,
    },
  );
  roots.push(run.root);
  return run;
}

describe('real pi --mode json against the scripted Chat Completions server', () => {
  it("edits the worktree through pi's own write and edit tools and completes with diff, final message, session id and usage", async () => {
    await server.script(
      [
        {
          kind: 'tool_calls',
          calls: [
            { id: 'call_write_1', name: 'write', arguments: { path: 'hello.txt', content: 'hello from real pi\n' } },
          ],
          usage: { prompt_tokens: 120, completion_tokens: 30 },
        },
        {
          kind: 'tool_calls',
          calls: [
            {
              id: 'call_edit_1',
              name: 'edit',
              arguments: { path: 'README.md', edits: [{ oldText: '# work', newText: '# work, edited by pi' }] },
            },
          ],
          usage: { prompt_tokens: 150, completion_tokens: 25 },
        },
        {
          kind: 'text',
          text: `Done.\n\n\`\`\`uh-runtime-final-message\n${SENTINEL_TEXT}\n\`\`\`\n`,
          usage: { prompt_tokens: 200, completion_tokens: 20 },
        },
      ],
      API_KEY,
    );
    const result = await runReal();
    const finished = terminalOf(result.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({
      status: 'completed',
      raw: 'exit:0',
      exit_code: 0,
    });
    expect(git(result.workDir, 'status', '--porcelain')).toBe('M README.md\n?? hello.txt');
    expect(readFileSync(join(result.workDir, 'hello.txt'), 'utf8')).toBe('hello from real pi\n');
    expect(git(result.workDir, 'diff')).toContain('+# work, edited by pi');
    expect(finished.final_message).toBe(SENTINEL_TEXT);
    expect(finished.final_message_source).toBe('sentinel');

    const folded = foldRuntimeEvents(result.events);
    expect(folded.session_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(finished.session_id).toBe(folded.session_id);
    expect(folded.usage).toEqual({ input_tokens: 470, output_tokens: 75, total_tokens: 545 });
    const tools = result.events
      .filter((e) => e.type === 'runtime.tool_call')
      .map((e) => `${e.data.name}:${e.data.status}`);
    expect(tools).toEqual(['write:started', 'write:completed', 'edit:started', 'edit:completed']);

    const requests = await server.requests();
    expect(requests).toHaveLength(3);
    expect(requests[0]!.tools).toEqual(expect.arrayContaining(['read', 'bash', 'edit', 'write']));
    expect(requests[1]!.tool_results[0]).toContain('hello.txt');
    expect(requests.every((r) => r.authorized && r.stream)).toBe(true);
    expect(JSON.stringify(result.events)).not.toContain(API_KEY);
  });

  it("without a sentinel, the final message is pi's last assistant text", async () => {
    await server.script([{ kind: 'text', text: 'Nothing to change; the repository already says hello.' }], API_KEY);
    const finished = terminalOf((await runReal()).events);
    expect(finished).toMatchObject({
      outcome: { status: 'completed' },
      final_message: 'Nothing to change; the repository already says hello.',
      final_message_source: 'native',
    });
  });

  it.each([
    [
      'HTTP 500',
      { kind: 'error', status: 500, body: { error: { message: 'internal boom', type: 'server_error' } } } as const,
      'failed',
      'stopReason:error',
    ],
    [
      'HTTP 429 insufficient_quota',
      {
        kind: 'error',
        status: 429,
        body: {
          error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' },
        },
      } as const,
      'blocked',
      'provider:quota',
    ],
  ])('classifies a scripted %s (pi itself exits 0)', async (_name, step, status, raw) => {
    await server.script([step], API_KEY);
    const result = await runReal();
    const finished = terminalOf(result.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({ status, raw, exit_code: 0 });
    expect(finished.session_id).toBeTruthy();
    expect(git(result.workDir, 'status', '--porcelain')).toBe('');
    expect(await server.requests()).toHaveLength(1);
  });

  it('is blocked (auth) on HTTP 401 from a wrong API key', async () => {
    await server.script([{ kind: 'text', text: 'never sent' }], API_KEY);
    const result = await runReal('sk-wrong-key-0000');
    const finished = terminalOf(result.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({
      status: 'blocked',
      raw: 'provider:auth',
    });
    expect(finished.outcome.message).toContain('401');
    expect(finished.outcome.hint).toMatch(/API key/);
  });

  /** The hanging model request has arrived (polls the server's record, 10 s at most). */
  async function waitForRequest(): Promise<void> {
    for (let i = 0; i < 200 && (await server.requests()).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  }

  it('is cancelled promptly while waiting on the model, leaving no process behind', async () => {
    await server.script([{ kind: 'hang' }], API_KEY);
    const controller = new AbortController();
    let pid: number | undefined;
    const started = Date.now();
    const result = await runReal(API_KEY, {
      signal: controller.signal,
      onEvent: (event) => {
        if (event.type === 'runtime.started') {
          pid = event.data.pid;
          void waitForRequest().then(() => controller.abort({ kind: 'cancel', message: 'cancelled by test' }));
        }
      },
    });
    expect(terminalOf(result.events).outcome.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(pid).toBeTypeOf('number');
    expect(await waitGroupGone(pid!)).toEqual([]);
    expect(await server.requests()).toHaveLength(1);
  });

  it('check() reports the pinned version', async () => {
    const check = await piAdapter.check(piAdapter.configSchema.parse({ binary: realRuntimeBinary('pi') }), {
      spawn: spawnGroup,
      fetch: globalThis.fetch,
      now: Date.now,
      env: { PATH: process.env.PATH, HOME: home },
    });
    expect(check).toMatchObject({ ok: true, version: '0.73.1' });
  });
});
