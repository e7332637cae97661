/**
 * The REAL `codex app-server` (pinned @openai/codex, installed by scripts/install-real-runtimes.sh)
 * against the scripted Responses API server on 127.0.0.1, with an isolated CODEX_HOME and HOME.
 * Never skipped: a missing binary fails each test with the install command.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codexAppServerAdapter } from '../../src/workers/runtimes/codex-app-server/codex-app-server-adapter.js';
import { foldRuntimeEvents } from '../../src/shared/runtime/fold-events.js';
import { runAdapter, terminalOf } from '../support/run-adapter.js';
import { startResponsesServer, type ResponsesServer } from '../support/responses-server.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { makeCodexHome } from '../support/codex-home.js';
import { git } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

const API_KEY = 'sk-uh-real-appserver-4c1d9a77';
let server: ResponsesServer;
let codexHome: string;
let home: string;
let counter = 0;

beforeAll(async () => {
  server = await startResponsesServer({ apiKey: API_KEY });
  codexHome = makeCodexHome(server.url);
  home = tempDir('uh-home-');
});
afterAll(async () => {
  await server?.close();
  removeDir(codexHome);
  removeDir(home);
});

const config = (extra: Record<string, unknown> = {}) => ({
  binary: realRuntimeBinary('codex'),
  codex_home: codexHome,
  env: { UH_MOCK_API_KEY: API_KEY },
  ...extra,
});
const env = () => ({ PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' });
const mission = () => ({ missionId: `m-as-${++counter}`, operationId: `op-as-${counter}` });
const journalOf = (logDir: string) =>
  JSON.parse(readFileSync(join(logDir, 'runtime-journal.json'), 'utf8')).codex_app_server;

function cancelOnStart(reason: unknown) {
  const controller = new AbortController();
  return {
    signal: controller.signal,
    onEvent: (e: { type: string }) => e.type === 'runtime.started' && controller.abort(reason),
  };
}

describe('real codex app-server: one turn per operation, read back', () => {
  it('edits a file through exec_command; the terminal event carries thread, turn and the readback status', async () => {
    await server.script([
      {
        kind: 'function_call',
        name: 'exec_command',
        arguments: { cmd: "printf 'hello from the app server\\n' > hello.txt" },
        call_id: 'call_edit_1',
      },
      { kind: 'message', text: 'Done.\n\n```uh-runtime-final-message\nCreated hello.txt.\n```\n' },
    ]);
    const m = mission();
    const run = await runAdapter(codexAppServerAdapter, config(), {
      env: env(),
      mission: m,
      prompt: 'Create hello.txt.',
    });
    const finished = terminalOf(run.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({
      status: 'completed',
      raw: 'readback:completed',
      timed_out: false,
    });
    expect(finished.readback_status).toBe('completed');
    expect(finished.final_message).toBe('Created hello.txt.');
    expect(finished.final_message_source).toBe('sentinel');
    expect(readFileSync(join(run.workDir, 'hello.txt'), 'utf8')).toBe('hello from the app server\n');
    expect(git(run.workDir, 'status', '--porcelain')).toBe('?? hello.txt');

    const folded = foldRuntimeEvents(run.events);
    expect(folded.thread_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(folded.turn_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(finished.thread_id).toBe(folded.thread_id);
    expect(finished.turn_id).toBe(folded.turn_id);
    expect(folded.usage).toEqual({
      input_tokens: 240,
      cached_input_tokens: 40,
      output_tokens: 60,
      reasoning_tokens: 10,
      total_tokens: 300,
    });
    expect(
      run.events.some(
        (e) => e.type === 'runtime.tool_call' && e.data.name === 'command' && e.data.status === 'completed',
      ),
    ).toBe(true);

    // The journal holds the identity, written as the run went.
    expect(journalOf(run.logDir)).toMatchObject({
      thread_id: folded.thread_id,
      thread_origin: 'started',
      baseline_turn_ids: [],
      client_message_id: `uh-op:${m.operationId}`,
      turn_id: folded.turn_id,
      dispatch: 'terminal',
      readback_status: 'completed',
    });
    expect(await server.requests()).toHaveLength(2);
    expect(JSON.stringify(run.events)).not.toContain(API_KEY);
  });

  it('never starts a second turn for an operation: running it again (same journal) reads the first turn back', async () => {
    await server.script([
      { kind: 'function_call', name: 'exec_command', arguments: { cmd: 'touch once.txt' }, call_id: 'call_once' },
      { kind: 'message', text: 'first and only' },
    ]);
    const m = mission();
    const first = await runAdapter(codexAppServerAdapter, config(), { env: env(), mission: m });
    const journalPath = join(first.logDir, 'runtime-journal.json');
    expect(await server.requests()).toHaveLength(2);
    for (let again = 0; again < 2; again++) {
      const rerun = await runAdapter(codexAppServerAdapter, config(), { env: env(), mission: m, journalPath });
      const finished = terminalOf(rerun.events);
      expect(finished).toMatchObject({
        outcome: { status: 'completed', raw: 'readback:completed' },
        turn_id: terminalOf(first.events).turn_id,
        final_message: 'first and only',
        readback_by: 'recover',
      });
      expect(rerun.events.some((e) => e.type === 'runtime.tool_call')).toBe(false);
    }
    // Two requests for the one turn; none for the re-runs.
    expect(await server.requests()).toHaveLength(2);
  });

  it('interrupts the turn on cancel: cancelled, read back as interrupted, one model request', async () => {
    await server.script([{ kind: 'hang' }]);
    const { signal, onEvent } = cancelOnStart({ kind: 'cancel', message: 'cancelled by test' });
    const run = await runAdapter(codexAppServerAdapter, config(), { env: env(), mission: mission(), signal, onEvent });
    const finished = terminalOf(run.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({
      status: 'cancelled',
      raw: 'readback:interrupted',
    });
    expect(finished.readback_status).toBe('interrupted');
    expect(journalOf(run.logDir)).toMatchObject({
      interrupt: 'cancel',
      dispatch: 'terminal',
      readback_status: 'interrupted',
    });
    expect((await server.requests()).length).toBeLessThanOrEqual(1);
  });

  it('interrupts the turn on the mission timeout: failed with timed_out', async () => {
    await server.script([{ kind: 'hang' }]);
    const { signal, onEvent } = cancelOnStart({
      kind: 'timeout',
      message: 'mission timed out after 1 s',
      timeoutMs: 1000,
    });
    const run = await runAdapter(codexAppServerAdapter, config(), { env: env(), mission: mission(), signal, onEvent });
    expect(terminalOf(run.events).outcome).toMatchObject({
      status: 'failed',
      timed_out: true,
      raw: 'readback:interrupted',
    });
    expect(terminalOf(run.events).readback_by).toBe('run');
  });

  it('when the app server dies mid-turn, a fresh one reads the turn back (interrupted), nothing is re-sent', async () => {
    await server.script([{ kind: 'hang' }]);
    let pid = 0;
    const run = await runAdapter(codexAppServerAdapter, config(), {
      env: env(),
      mission: mission(),
      onEvent: (e) => {
        if (e.type !== 'runtime.started') return;
        pid = e.data.pid as number;
        // Once the turn reached the model, kill the app server's whole process group.
        void (async () => {
          while ((await server.requests()).length === 0) await new Promise((r) => setTimeout(r, 25));
          process.kill(-pid, 'SIGKILL');
        })();
      },
    });
    const finished = terminalOf(run.events);
    expect(pid).toBeGreaterThan(0);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject({
      status: 'failed',
      raw: 'readback:interrupted',
    });
    expect(finished).toMatchObject({
      readback_status: 'interrupted',
      readback_by: 'recover',
      recovery: { state: 'settled' },
    });
    expect(finished.turn_id).toBe(foldRuntimeEvents(run.events).turn_id);
    expect(await server.requests()).toHaveLength(1);
  });

  it.each([
    [
      'response.failed (server_error)',
      { kind: 'failed', code: 'server_error', message: 'boom' },
      { status: 'failed', raw: 'readback:failed:other' },
    ],
    [
      'response.failed (rate_limit_exceeded)',
      { kind: 'failed', code: 'rate_limit_exceeded', message: 'Rate limit reached. Please try again in 2.5s.' },
      { status: 'blocked', raw: 'readback:failed:rateLimitExceeded', retry_after_ms: 2500 },
    ],
    [
      'response.failed (insufficient_quota)',
      { kind: 'failed', code: 'insufficient_quota', message: 'quota' },
      { status: 'blocked', raw: 'readback:failed:usageLimitExceeded' },
    ],
    [
      'HTTP 401',
      { kind: 'http', status: 401, body: { error: { message: 'bad key' } } },
      { status: 'blocked', raw: 'readback:failed:httpConnectionFailed' },
    ],
  ] as const)('%s: the failed turn is read back and classified', async (_name, step, expected) => {
    await server.script([step as never]);
    const run = await runAdapter(codexAppServerAdapter, config(), { env: env(), mission: mission() });
    const finished = terminalOf(run.events);
    expect(finished.outcome, JSON.stringify(finished.outcome)).toMatchObject(expected);
    expect(finished.readback_status).toBe('failed');
    expect(finished.turn_id).toBeTruthy();
    expect(await server.requests()).toHaveLength(1);
  });

  it('answers approval requests by the declared policy: declines a command reaching outside the worktree, accepts one inside', async () => {
    const outside = join(tempDir('uh-outside-'), 'escaped.txt');
    await server.script([
      {
        kind: 'function_call',
        name: 'exec_command',
        arguments: { cmd: `touch ${outside}`, sandbox_permissions: 'require_escalated', justification: 'test' },
        call_id: 'call_out',
      },
      {
        kind: 'function_call',
        name: 'exec_command',
        arguments: { cmd: 'touch inside.txt', sandbox_permissions: 'require_escalated', justification: 'test' },
        call_id: 'call_in',
      },
      { kind: 'message', text: 'done' },
    ]);
    const run = await runAdapter(codexAppServerAdapter, config({ approval_policy: 'on-request' }), {
      env: env(),
      mission: mission(),
    });
    expect(terminalOf(run.events).outcome.status).toBe('completed');
    const answers = run.events
      .filter((e) => e.type === 'runtime.permission')
      .map((e) => [e.data.accepted, e.data.answer]);
    expect(answers).toEqual([
      [false, { decision: 'decline' }],
      [true, { decision: 'accept' }],
    ]);
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(join(run.workDir, 'inside.txt'))).toBe(true);
  });

  it('a follow-up operation of the same mission resumes the thread: a new turn, the first one in its baseline', async () => {
    const missionId = `m-follow-${process.pid}`;
    await server.script([{ kind: 'message', text: 'first' }]);
    const first = await runAdapter(codexAppServerAdapter, config(), {
      env: env(),
      mission: { missionId, operationId: 'op-follow-1' },
    });
    await server.script([{ kind: 'message', text: 'second' }]);
    const second = await runAdapter(codexAppServerAdapter, config(), {
      env: env(),
      mission: { missionId, operationId: 'op-follow-2' },
    });
    const a = terminalOf(first.events);
    const b = terminalOf(second.events);
    expect(b.outcome.status).toBe('completed');
    expect(b.thread_id).toBe(a.thread_id);
    expect(b.turn_id).not.toBe(a.turn_id);
    expect(b.final_message).toBe('second');
    expect(journalOf(second.logDir)).toMatchObject({
      thread_origin: 'resumed',
      baseline_turn_ids: [a.turn_id],
      client_message_id: 'uh-op:op-follow-2',
    });
    // The second turn's model request carries the first turn's history.
    const [request] = await server.requests();
    expect(JSON.stringify(request!.body.input)).toContain('first');
  });
});
