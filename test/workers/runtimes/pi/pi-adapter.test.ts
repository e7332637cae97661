import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { piAdapter } from '../../../../src/workers/runtimes/pi/pi-adapter.js';
import { ohMyPiAdapter } from '../../../../src/workers/runtimes/oh-my-pi/oh-my-pi-adapter.js';
import { foldRuntimeEvents } from '../../../../src/shared/runtime/fold-events.js';
import { spawnGroup } from '../../../../src/shared/process/spawn-group.js';
import { runAdapter, terminalOf } from '../../../support/run-adapter.js';
import { removeDir, tempDir } from '../../../support/temp.js';

const FAKE_PI = fileURLToPath(new URL('../../../fixtures/bin/fake-pi.mjs', import.meta.url));
const FAKE_OMP = fileURLToPath(new URL('../../../fixtures/bin/fake-omp.mjs', import.meta.url));
const SECRET = 'sk-pi-adapter-test-9c1e77';
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const pi = (scenario: string, extra: Record<string, unknown> = {}, env: Record<string, string> = {}) =>
  runAdapter(
    piAdapter,
    { binary: FAKE_PI, env: { UH_FAKE_SCENARIO: scenario, OPENAI_API_KEY: SECRET, ...env }, ...extra },
    { prompt: '# Mission m-test\n\nWrite hello.txt.' },
  );

describe('pi adapter (fake pi)', () => {
  it('completes a run that edits a file, with session id, usage, tool calls and the sentinel final message', async () => {
    const argvDir = tempDir('uh-pi-argv-');
    dirs.push(argvDir);
    const run = await pi('success', {}, { FAKE_PI_ARGV_FILE: join(argvDir, 'argv.json') });
    dirs.push(run.root);
    const end = terminalOf(run.events);
    expect(end.outcome).toMatchObject({ status: 'completed', raw: 'exit:0', exit_code: 0 });
    expect(end.final_message).toBe('Created hello.txt with a greeting.');
    expect(end.final_message_source).toBe('sentinel');
    expect(readFileSync(join(run.workDir, 'hello.txt'), 'utf8')).toBe('hello from fake pi\n');
    const folded = foldRuntimeEvents(run.events);
    expect(folded.session_id).toBe('01a22bfb-fake-7000-8000-00000000cafe');
    // The session id is journaled (durably) as soon as it is known.
    expect(JSON.parse(readFileSync(join(run.logDir, 'runtime-journal.json'), 'utf8'))).toMatchObject({
      session_id: folded.session_id,
    });
    expect(folded.usage).toMatchObject({ input_tokens: 320, output_tokens: 50, total_tokens: 370 });
    expect(folded.tool_calls).toBe(1);
    const tools = run.events.filter((e) => e.type === 'runtime.tool_call').map((e) => e.data.status);
    expect(tools).toEqual(['started', 'completed']);
    expect(run.events.some((e) => e.type === 'runtime.thought')).toBe(true);
    // pi gets the prompt on stdin, never as an argument.
    const seen = JSON.parse(readFileSync(join(argvDir, 'argv.json'), 'utf8'));
    expect(seen.prompt).toBe('# Mission m-test\n\nWrite hello.txt.');
    expect(seen.argv).toEqual(['--print', '--mode', 'json', '--no-session']);
    expect(JSON.stringify(run.events)).not.toContain(SECRET);
    expect(statSync(join(run.logDir, 'pi.stdout.jsonl')).size).toBeGreaterThan(0);
  });

  it('falls back to the last assistant text without a sentinel, then to agent_end.messages', async () => {
    const native = await pi('no-sentinel');
    dirs.push(native.root);
    expect(terminalOf(native.events)).toMatchObject({
      outcome: { status: 'completed' },
      final_message: 'All done: hello.txt now holds a greeting.',
      final_message_source: 'native',
    });
    const agentEnd = await pi('agent-end-only');
    dirs.push(agentEnd.root);
    expect(terminalOf(agentEnd.events)).toMatchObject({
      outcome: { status: 'completed' },
      final_message: 'Summary only in agent_end.',
    });
  });

  it.each([
    ['auth', 'blocked', 'provider:auth'],
    ['no-key', 'blocked', 'provider:auth'],
    ['quota', 'blocked', 'provider:quota'],
    ['rate-limit', 'blocked', 'provider:rate_limit'],
    ['server-error', 'failed', 'stopReason:error'],
    ['crash', 'failed', 'exit:1'],
    ['empty', 'failed', 'no_final_message'],
  ])('classifies the %s scenario as %s (%s)', async (scenario, status, raw) => {
    const run = await pi(scenario);
    dirs.push(run.root);
    expect(terminalOf(run.events).outcome).toMatchObject({ status, raw });
    expect(run.events.filter((e) => e.type === 'runtime.finished')).toHaveLength(1);
  });

  it('records malformed lines as runtime.raw events and still completes', async () => {
    const run = await pi('garbage');
    dirs.push(run.root);
    expect(terminalOf(run.events).outcome.status).toBe('completed');
    const raws = run.events.filter((e) => e.type === 'runtime.raw').map((e) => e.data.reason);
    expect(raws).toEqual(['not_json', 'schema', 'schema', 'schema', 'unknown_event_type', 'not_json']);
  });

  it('streams huge output to disk and keeps events small', async () => {
    const run = await pi('huge', {}, { FAKE_PI_HUGE_MB: '40' });
    dirs.push(run.root);
    expect(terminalOf(run.events).outcome.status).toBe('completed');
    expect(statSync(join(run.logDir, 'pi.stdout.jsonl')).size).toBeGreaterThan(45 * 1024 * 1024);
    expect(run.events.some((e) => e.type === 'runtime.raw' && e.data.reason === 'too_long')).toBe(true);
    expect(JSON.stringify(run.events).length).toBeLessThan(64 * 1024);
  });

  it('is blocked with an install hint when the binary is missing', async () => {
    const run = await runAdapter(piAdapter, { binary: '/nonexistent/pi' });
    dirs.push(run.root);
    const outcome = terminalOf(run.events).outcome;
    expect(outcome).toMatchObject({ status: 'blocked', raw: 'spawn:ENOENT' });
    expect(outcome.hint).toContain('npm i -g @mariozechner/pi-coding-agent');
  });

  it('check() reports the version, or what is missing', async () => {
    const ctx = { spawn: spawnGroup, fetch: globalThis.fetch, now: Date.now, env: process.env };
    const good = await piAdapter.check(piAdapter.configSchema.parse({ binary: FAKE_PI }), ctx);
    expect(good).toMatchObject({ ok: true, version: '0.73.1' });
    const missing = await piAdapter.check(piAdapter.configSchema.parse({ binary: 'no-such-pi-binary' }), ctx);
    expect(missing.ok).toBe(false);
    expect(missing.hint).toContain('pi-coding-agent');
  });

  it('rejects unknown config keys and describes the argv without the prompt', async () => {
    expect(piAdapter.configSchema.safeParse({ binary: 'pi', modle: 'x' }).success).toBe(false);
    const config = piAdapter.configSchema.parse({
      provider: 'uhtest',
      model: 'm',
      tools: ['read', 'write'],
      context_files: false,
    });
    const plan = await piAdapter.prepare({
      config,
      prompt: 'secret plan',
      workDir: '/tmp',
      mission: { missionId: 'm', operationId: 'o' },
    });
    expect(plan.describe.argv).toEqual([
      'pi',
      '--print',
      '--mode',
      'json',
      '--no-session',
      '--provider',
      'uhtest',
      '--model',
      'm',
      '--tools',
      'read,write',
      '--no-context-files',
    ]);
  });
});

describe('oh-my-pi adapter (fake omp)', () => {
  it('passes the prompt as the last argument and completes', async () => {
    const argvDir = tempDir('uh-omp-argv-');
    dirs.push(argvDir);
    const run = await runAdapter(
      ohMyPiAdapter,
      { binary: FAKE_OMP, env: { FAKE_PI_ARGV_FILE: join(argvDir, 'argv.json') } },
      { prompt: '-starts with a dash' },
    );
    dirs.push(run.root);
    expect(terminalOf(run.events).outcome.status).toBe('completed');
    const seen = JSON.parse(readFileSync(join(argvDir, 'argv.json'), 'utf8'));
    expect(seen.argv.slice(0, 4)).toEqual(['--print', '--mode', 'json', '--no-session']);
    expect(seen.prompt).toBe('\n-starts with a dash');
    expect(statSync(join(run.logDir, 'oh-my-pi.stdout.jsonl')).size).toBeGreaterThan(0);
  });

  it('fails on a terminal provider error with a non-zero exit', async () => {
    const run = await runAdapter(ohMyPiAdapter, { binary: FAKE_OMP, env: { UH_FAKE_SCENARIO: 'fail-exit' } });
    dirs.push(run.root);
    expect(terminalOf(run.events).outcome).toMatchObject({ status: 'failed', raw: 'stopReason:error', exit_code: 1 });
  });
});
