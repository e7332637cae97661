import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { codexAdapter } from '../../../../src/workers/runtimes/codex/codex-adapter.js';
import { foldRuntimeEvents } from '../../../../src/shared/runtime/fold-events.js';
import { spawnGroup } from '../../../../src/shared/process/spawn-group.js';
import type { RuntimeEventV1 } from '../../../../src/shared/runtime/v1/index.js';
import { runAdapter, terminalOf } from '../../../support/run-adapter.js';
import { git } from '../../../support/git-repo.js';
import { tempDir } from '../../../support/temp.js';

const FAKE = fileURLToPath(new URL('../../../fixtures/bin/fake-codex', import.meta.url));

function run(scenario: string, config: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  return runAdapter(
    codexAdapter,
    { binary: FAKE, ...config },
    { env: { ...process.env, FAKE_CODEX_SCENARIO: scenario, ...env }, prompt: 'Create hello.txt.' },
  );
}

const ofType = <T extends RuntimeEventV1['type']>(events: RuntimeEventV1[], type: T) =>
  events.filter((e): e is Extract<RuntimeEventV1, { type: T }> => e.type === type);

describe('codex adapter (fake codex)', () => {
  it('runs codex exec with the documented argv, stdin closed, and completes with diff, sentinel, thread id and usage', async () => {
    const argvFile = join(tempDir('uh-argv-'), 'argv.json');
    const codexHome = tempDir('uh-codex-home-');
    const result = await run(
      'success',
      {
        model: 'gpt-test',
        profile: 'ci',
        codex_home: codexHome,
        config_overrides: { model_reasoning_effort: 'low', 'sandbox_workspace_write.network_access': false },
      },
      { FAKE_CODEX_ARGV_FILE: argvFile },
    );
    const seen = JSON.parse(readFileSync(argvFile, 'utf8'));
    const lastMessageFile = join(result.logDir, 'codex-last-message.txt');
    expect(seen.argv).toEqual([
      'exec',
      '--json',
      '--output-last-message',
      lastMessageFile,
      '--cd',
      result.workDir,
      '--sandbox',
      'workspace-write',
      '--skip-git-repo-check',
      '--ephemeral',
      '-m',
      'gpt-test',
      '-p',
      'ci',
      '-c',
      'model_reasoning_effort="low"',
      '-c',
      'sandbox_workspace_write.network_access=false',
      '--',
      'Create hello.txt.',
    ]);
    expect(seen.stdin).toBe('');
    expect(seen.env_codex_home).toBe(codexHome);

    const finished = terminalOf(result.events);
    expect(finished.outcome).toMatchObject({ status: 'completed', raw: 'turn.completed', exit_code: 0 });
    expect(finished.final_message).toBe('Created hello.txt with a greeting.');
    expect(finished.final_message_source).toBe('sentinel');
    expect(git(result.workDir, 'status', '--porcelain')).toBe('?? hello.txt');
    expect(readFileSync(join(result.workDir, 'hello.txt'), 'utf8')).toBe('hello from codex\n');

    const folded = foldRuntimeEvents(result.events);
    expect(folded.thread_id).toBe('0199fake-c0de-7000-8000-000000000001');
    expect(folded.session_id).toBe('0199fake-c0de-7000-8000-000000000001');
    expect(folded.usage).toEqual({
      input_tokens: 1200,
      cached_input_tokens: 200,
      output_tokens: 300,
      reasoning_tokens: 50,
      total_tokens: 1500,
    });
    expect(ofType(result.events, 'runtime.started')[0]?.data).toMatchObject({
      thread_id: folded.thread_id,
      pid: expect.any(Number),
    });
    expect(ofType(result.events, 'runtime.tool_call').map((e) => e.data.name)).toEqual([
      'command_execution',
      'command_execution',
      'file_change',
    ]);
    expect(folded.tool_calls).toBe(2);
    expect(ofType(result.events, 'runtime.thought')).toHaveLength(1);
    expect(ofType(result.events, 'runtime.plan')).toHaveLength(2);
    // The non-fatal error item is a warning, not a failure.
    expect(ofType(result.events, 'runtime.log').some((e) => e.data.non_fatal === true && e.data.level === 'warn')).toBe(
      true,
    );
    expect(statSync(join(result.logDir, 'codex.stdout.jsonl')).size).toBeGreaterThan(0);
    // The thread id is in the durable journal too.
    expect(JSON.parse(readFileSync(join(result.logDir, 'runtime-journal.json'), 'utf8'))).toMatchObject({
      codex_thread_id: folded.thread_id,
    });
  });

  it('falls back to the raw -o file content when the sentinel is missing', async () => {
    const finished = terminalOf((await run('no-sentinel')).events);
    expect(finished.outcome.status).toBe('completed');
    expect(finished.final_message).toBe('I created hello.txt; nothing else to report.');
    expect(finished.final_message_source).toBe('native');
  });

  it.each([
    ['auth', 'blocked', 'auth'],
    ['quota', 'blocked', 'quota'],
    ['usage-limit', 'blocked', 'usage_limit'],
    ['rate-limit', 'blocked', 'rate_limit'],
    ['turn-failed', 'failed', 'turn.failed'],
    ['crash', 'failed', 'exit:101'],
  ])('classifies the %s scenario as %s (%s)', async (scenario, status, raw) => {
    const result = await run(scenario);
    const finished = terminalOf(result.events);
    expect(finished.outcome.status).toBe(status);
    expect(finished.outcome.raw).toBe(raw);
    expect(finished.thread_id).toBe('0199fake-c0de-7000-8000-000000000001');
    if (scenario === 'usage-limit') expect(finished.outcome.retry_after_ms).toBe(180_000);
    if (scenario === 'crash') expect(finished.outcome.message).toMatch(/exited with code 101: .*panicked/s);
    expect(git(result.workDir, 'status', '--porcelain')).toBe('');
  });

  it('stops codex waiting for an unreachable endpoint after network_wait_ms, as blocked', async () => {
    const started = Date.now();
    const result = await run('offline', { network_wait_ms: 300, kill_grace_ms: 500 });
    const finished = terminalOf(result.events);
    expect(finished.outcome).toMatchObject({ status: 'blocked', raw: 'unreachable' });
    expect(finished.outcome.message).toMatch(/waiting for network/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('is blocked with an install hint when the binary is missing', async () => {
    const result = await runAdapter(codexAdapter, { binary: '/nonexistent/codex' });
    const finished = terminalOf(result.events);
    expect(finished.outcome).toMatchObject({ status: 'blocked', raw: 'spawn:ENOENT' });
    expect(finished.outcome.hint).toMatch(/npm i -g @openai\/codex/);
    expect(result.events).toHaveLength(1);
  });

  it('records garbage, schema-invalid and unknown lines as raw events and still completes', async () => {
    const result = await run('garbage');
    const raws = ofType(result.events, 'runtime.raw').map((e) => e.data.reason);
    expect(raws).toEqual([
      'not_json',
      'schema',
      'schema',
      'unknown event type session.configured',
      'unknown item type collab_tool_call',
      'not_json',
    ]);
    expect(terminalOf(result.events)).toMatchObject({ outcome: { status: 'completed' }, malformed_lines: 4 });
  });

  it('streams a huge output to disk, caps an over-long line and completes', async () => {
    const result = await run('huge', {}, { FAKE_CODEX_HUGE_MB: '24' });
    const finished = terminalOf(result.events);
    expect(finished.outcome.status).toBe('completed');
    expect(finished.final_message).toBe('Printed a lot.');
    expect(ofType(result.events, 'runtime.raw').map((e) => e.data.reason)).toEqual(['too_long']);
    expect(statSync(join(result.logDir, 'codex.stdout.jsonl')).size).toBeGreaterThan(24 * 1024 * 1024);
  });

  it('describes the run for --dry-run without the prompt or secrets', async () => {
    const config = codexAdapter.configSchema.parse({
      binary: FAKE,
      config_overrides: { 'model_providers.x.experimental_bearer_token': 'sk-dry-run-secret-1234' },
    });
    const plan = await codexAdapter.prepare({
      config,
      prompt: 'a secret plan',
      workDir: '/w',
      mission: { missionId: 'm', operationId: 'o' },
    });
    const text = JSON.stringify(plan.describe);
    expect(text).not.toContain('sk-dry-run-secret-1234');
    expect(text).not.toContain('a secret plan');
    expect(text).toContain('<prompt: 13 chars>');
  });

  it('rejects unknown config keys', () => {
    expect(codexAdapter.configSchema.safeParse({ binary: 'codex', full_auto: true }).success).toBe(false);
    expect(codexAdapter.configSchema.safeParse({ sandbox: 'yolo' }).success).toBe(false);
    expect(codexAdapter.configSchema.safeParse({ codex_home: 'relative/home' }).success).toBe(false);
  });

  it('check() reports the version, or a missing binary with a hint', async () => {
    const ctx = { spawn: spawnGroup, fetch: globalThis.fetch, now: Date.now, env: process.env };
    const good = await codexAdapter.check(codexAdapter.configSchema.parse({ binary: FAKE }), ctx);
    expect(good).toMatchObject({ ok: true, version: '0.171.0' });
    const bad = await codexAdapter.check(codexAdapter.configSchema.parse({ binary: '/nonexistent/codex' }), ctx);
    expect(bad.ok).toBe(false);
    expect(bad.hint).toMatch(/npm i -g @openai\/codex/);
  });
});
