/**
 * The REAL codex CLI (pinned, installed by scripts/install-real-runtimes.sh) against our scripted
 * Responses API server on 127.0.0.1, with an isolated CODEX_HOME and HOME. Never skipped: a
 * missing binary fails every test with the install command (resolved per test, so none is skipped).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codexAdapter } from '../../src/workers/runtimes/codex/codex-adapter.js';
import { foldRuntimeEvents } from '../../src/shared/runtime/fold-events.js';
import { spawnGroup } from '../../src/shared/process/spawn-group.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { startResponsesServer, type ResponsesServer } from '../support/responses-server.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { git } from '../support/git-repo.js';
import { waitGroupGone } from '../support/process-group.js';
import { removeDir, tempDir } from '../support/temp.js';

const API_KEY = 'sk-uh-real-codex-5b2f8e1c';
const SENTINEL_TEXT = 'Created hello.txt containing a greeting.';
let server: ResponsesServer;
let codexHome: string;
let home: string;

beforeAll(async () => {
  server = await startResponsesServer({ apiKey: API_KEY });
  codexHome = tempDir('uh-codex-home-');
  home = tempDir('uh-home-');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      'model = "uh-scripted"',
      'model_provider = "uhmock"',
      '[model_providers.uhmock]',
      'name = "uh scripted responses server"',
      `base_url = "${server.url}"`,
      'wire_api = "responses"',
      'env_key = "UH_MOCK_API_KEY"',
      // Fail fast: no retries against a scripted error.
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await server?.close();
  if (codexHome) removeDir(codexHome);
  if (home) removeDir(home);
});

function runReal(key = API_KEY, options: Parameters<typeof runAdapter>[2] = {}, extra: Record<string, unknown> = {}) {
  return runAdapter(
    codexAdapter,
    { binary: realRuntimeBinary('codex'), codex_home: codexHome, env: { UH_MOCK_API_KEY: key }, ...extra },
    {
      env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' },
      prompt: 'Create hello.txt with a greeting.',
      ...options,
    },
  );
}

describe('real codex exec against the scripted Responses server', () => {
  it('edits a file through exec_command and completes with diff, final message, thread id and usage', async () => {
    await server.script([
      {
        kind: 'function_call',
        name: 'exec_command',
        arguments: { cmd: "printf 'hello from real codex\\n' > hello.txt" },
        call_id: 'call_edit_1',
      },
      { kind: 'message', text: `Done.\n\n\`\`\`uh-runtime-final-message\n${SENTINEL_TEXT}\n\`\`\`\n` },
    ]);
    const result = await runReal(
      API_KEY,
      {},
      { model: 'uh-scripted-m', config_overrides: { model_reasoning_effort: 'low' } },
    );
    const finished = terminalOf(result.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({
      status: 'completed',
      raw: 'turn.completed',
      exit_code: 0,
    });
    expect(git(result.workDir, 'status', '--porcelain')).toBe('?? hello.txt');
    expect(readFileSync(join(result.workDir, 'hello.txt'), 'utf8')).toBe('hello from real codex\n');
    expect(finished.final_message).toBe(SENTINEL_TEXT);
    expect(finished.final_message_source).toBe('sentinel');

    const folded = foldRuntimeEvents(result.events);
    expect(folded.thread_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(finished.thread_id).toBe(folded.thread_id);
    // Two model requests of 120 in / 30 out (20 cached, 5 reasoning) each.
    expect(folded.usage).toEqual({
      input_tokens: 240,
      cached_input_tokens: 40,
      output_tokens: 60,
      reasoning_tokens: 10,
      total_tokens: 300,
    });
    expect(
      result.events.some(
        (e) => e.type === 'runtime.tool_call' && e.data.name === 'command_execution' && e.data.exit_code === 0,
      ),
    ).toBe(true);

    const requests = await server.requests();
    expect(requests).toHaveLength(2);
    // -m and -c reached codex: the model id and the reasoning effort are in the request.
    expect(requests[0]!.body.model).toBe('uh-scripted-m');
    expect(requests[0]!.body.reasoning).toMatchObject({ effort: 'low' });
    const output = requests[1]!.body.input?.find((i) => i.type === 'function_call_output');
    expect(output).toMatchObject({ call_id: 'call_edit_1' });
    expect(JSON.stringify(result.events)).not.toContain(API_KEY);
  });

  it.each([
    [
      'response.failed',
      { kind: 'failed', code: 'server_error', message: 'the model broke' } as const,
      'failed',
      'turn.failed',
    ],
    [
      'HTTP 500',
      { kind: 'http', status: 500, body: { error: { message: 'internal boom' } } } as const,
      'failed',
      'turn.failed',
    ],
    [
      'HTTP 429 insufficient_quota',
      {
        kind: 'http',
        status: 429,
        body: {
          error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' },
        },
      } as const,
      'blocked',
      'quota',
    ],
  ])('classifies a scripted %s', async (_name, step, status, raw) => {
    await server.script([step]);
    const result = await runReal();
    const finished = terminalOf(result.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({ status, raw });
    expect(finished.thread_id).toBeTruthy();
    expect(git(result.workDir, 'status', '--porcelain')).toBe('');
  });

  it('layers a profile from CODEX_HOME (-p)', async () => {
    writeFileSync(join(codexHome, 'uhci.config.toml'), 'model = "uh-profile-model"\n');
    await server.script([{ kind: 'message', text: 'ok' }]);
    const result = await runReal(API_KEY, {}, { profile: 'uhci' });
    expect(terminalOf(result.events).outcome.status).toBe('completed');
    expect((await server.requests())[0]!.body.model).toBe('uh-profile-model');
  });

  it('is blocked (auth) on HTTP 401 from a wrong API key', async () => {
    await server.script([{ kind: 'message', text: 'never sent' }]);
    const result = await runReal('sk-wrong-key-0000');
    const finished = terminalOf(result.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({ status: 'blocked', raw: 'auth' });
    expect(finished.outcome.hint).toMatch(/codex login|API key/);
  });

  /** The hanging model request has arrived (polls the server's record, 10 s at most). */
  async function waitForRequest(): Promise<void> {
    for (let i = 0; i < 200 && (await server.requests()).length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  }

  it('is cancelled promptly while waiting on the model, leaving no process behind', async () => {
    await server.script([{ kind: 'hang' }]);
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

  it('is blocked (unreachable) when the model endpoint refuses connections', async () => {
    const offlineHome = tempDir('uh-codex-home-offline-');
    // Port 1 on loopback: nothing listens there, every connection is refused.
    writeFileSync(
      join(offlineHome, 'config.toml'),
      readFileSync(join(codexHome, 'config.toml'), 'utf8').replace(server.url, 'http://127.0.0.1:1/v1'),
    );
    try {
      const result = await runAdapter(
        codexAdapter,
        {
          binary: realRuntimeBinary('codex'),
          codex_home: offlineHome,
          env: { UH_MOCK_API_KEY: API_KEY },
          network_wait_ms: 0,
          kill_grace_ms: 500,
        },
        { env: { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' }, prompt: 'Say hi.' },
      );
      const finished = terminalOf(result.events);
      expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({
        status: 'blocked',
        raw: 'unreachable',
      });
    } finally {
      removeDir(offlineHome);
    }
  });

  it('check() reports the pinned version', async () => {
    const check = await codexAdapter.check(codexAdapter.configSchema.parse({ binary: realRuntimeBinary('codex') }), {
      spawn: spawnGroup,
      fetch: globalThis.fetch,
      now: Date.now,
      env: process.env,
    });
    expect(check).toMatchObject({ ok: true, version: '0.171.0' });
  });
});
