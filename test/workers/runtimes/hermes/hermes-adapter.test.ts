import { chmodSync, copyFileSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { hermesAdapter } from '../../../../src/workers/runtimes/hermes/hermes-adapter.js';
import { foldRuntimeEvents } from '../../../../src/shared/runtime/fold-events.js';
import { spawnGroup } from '../../../../src/shared/process/spawn-group.js';
import { runAdapter, terminalOf } from '../../../support/run-adapter.js';
import { removeDir, tempDir } from '../../../support/temp.js';

const FAKE = fileURLToPath(new URL('../../../fixtures/bin/fake-hermes.mjs', import.meta.url));
const SECRET = 'sk-hermes-adapter-test-51d0aa';
const PROMPT = '# Mission m-test\n\nCreate hello.txt. Quotes " and $(nothing) stay literal.';
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

// The adapter caches `hermes chat --help` per binary (path and mtime), as an upgrade changes
// both; an "older CLI" (no --format, no --query-file) is therefore its own copy of the fake.
const OLD_DIR = tempDir('uh-hermes-old-');
dirs.push(OLD_DIR);
const OLD = join(OLD_DIR, 'hermes');
copyFileSync(FAKE, OLD);
chmodSync(OLD, 0o755);
const OLD_ENV = { FAKE_HERMES_FEATURES: '' };

async function hermes(scenario: string, env: Record<string, string> = {}, extra: Record<string, unknown> = {}) {
  const binary = env.FAKE_HERMES_FEATURES === '' || scenario === 'version-old' ? OLD : FAKE;
  const run = await runAdapter(
    hermesAdapter,
    { binary, env: { UH_FAKE_SCENARIO: scenario, OPENROUTER_API_KEY: SECRET, ...env }, ...extra },
    { prompt: PROMPT },
  );
  dirs.push(run.root);
  return run;
}

describe('hermes adapter (fake hermes)', () => {
  it('stream-json: completes an edit with session id, usage, tool calls and the sentinel final message', async () => {
    const argvDir = tempDir('uh-hermes-argv-');
    dirs.push(argvDir);
    const run = await hermes(
      'success',
      { FAKE_HERMES_ARGV_FILE: join(argvDir, 'argv.json') },
      { model: 'anthropic/claude-sonnet-4', toolsets: ['file', 'terminal'] },
    );
    const end = terminalOf(run.events);
    expect(end.outcome).toMatchObject({ status: 'completed', raw: 'exit:0' });
    expect(end.format).toBe('stream-json');
    expect(end.final_message).toBe('Created hello.txt with a greeting from Hermes.');
    expect(end.final_message_source).toBe('sentinel');
    expect(readFileSync(join(run.workDir, 'hello.txt'), 'utf8')).toBe('hello from fake hermes\n');
    const folded = foldRuntimeEvents(run.events);
    expect(folded.session_id).toBe('20261130_101500_fa4e01');
    expect(JSON.parse(readFileSync(join(run.logDir, 'runtime-journal.json'), 'utf8'))).toMatchObject({
      session_id: folded.session_id,
    });
    expect(folded.usage).toEqual({
      input_tokens: 5000,
      output_tokens: 200,
      total_tokens: 5200,
      cached_input_tokens: 1200,
    });
    expect(folded.tool_calls).toBe(1);
    const seen = JSON.parse(readFileSync(join(argvDir, 'argv.json'), 'utf8'));
    // The prompt goes through stdin (--query-file -), verbatim, never into argv.
    expect(seen.prompt).toBe(PROMPT);
    expect(seen.argv).toEqual([
      'chat',
      '--query-file',
      '-',
      '-Q',
      '--format',
      'stream-json',
      '--source',
      'tool',
      '-m',
      'anthropic/claude-sonnet-4',
      '-t',
      'file,terminal',
    ]);
    expect(JSON.stringify(run.events)).not.toContain(SECRET);
  });

  it('text mode on an older CLI: -q <prompt> -Q, session id from stderr, sentinel from stdout', async () => {
    const argvDir = tempDir('uh-hermes-argv-');
    dirs.push(argvDir);
    const run = await hermes('success', { ...OLD_ENV, FAKE_HERMES_ARGV_FILE: join(argvDir, 'argv.json') });
    const end = terminalOf(run.events);
    expect(end).toMatchObject({
      outcome: { status: 'completed' },
      format: 'text',
      session_id: '20261130_101500_fa4e01',
      final_message: 'Created hello.txt with a greeting from Hermes.',
    });
    const seen = JSON.parse(readFileSync(join(argvDir, 'argv.json'), 'utf8'));
    expect(seen.argv.slice(0, 4)).toEqual(['chat', '-q', PROMPT, '-Q']);
    expect(statSync(join(run.logDir, 'hermes.stdout.log')).size).toBeGreaterThan(0);
  });

  it('a missing sentinel leaves the final message empty (Hermes has no native summary)', async () => {
    const run = await hermes('no-sentinel');
    expect(terminalOf(run.events)).toMatchObject({
      outcome: { status: 'completed' },
      final_message: '',
      final_message_source: 'none',
    });
  });

  it.each([
    ['auth', {}, 'blocked', 'provider:auth'],
    ['auth', OLD_ENV, 'blocked', 'provider:auth'],
    ['quota', {}, 'blocked', 'provider:quota'],
    ['rate-limit', {}, 'blocked', 'provider:rate_limit'],
    ['fail', {}, 'failed', 'result:exit_code:1'],
    ['crash', {}, 'failed', 'exit:1'],
    ['no-result', {}, 'failed', 'stream-json:no_result'],
  ])('classifies %s %j as %s (%s)', async (scenario, env, status, raw) => {
    const run = await hermes(scenario, env as Record<string, string>);
    expect(terminalOf(run.events).outcome).toMatchObject({ status, raw });
  });

  it('records malformed lines as runtime.raw and still completes', async () => {
    const run = await hermes('garbage');
    expect(terminalOf(run.events).outcome.status).toBe('completed');
    expect(run.events.filter((e) => e.type === 'runtime.raw').map((e) => e.data.reason)).toEqual([
      'not_json',
      'schema',
      'unknown_event_type',
      'not_json',
    ]);
  });

  it('streams huge output to disk with small events', async () => {
    const run = await hermes('huge', { FAKE_HERMES_HUGE_MB: '32' });
    const end = terminalOf(run.events);
    expect(end.outcome.status).toBe('completed');
    expect(end.final_message).toBe('Created hello.txt with a greeting from Hermes.');
    expect(statSync(join(run.logDir, 'hermes.stdout.jsonl')).size).toBeGreaterThan(36 * 1024 * 1024);
    expect(JSON.stringify(run.events).length).toBeLessThan(256 * 1024);
  });

  it('is blocked when the binary is missing', async () => {
    const run = await runAdapter(hermesAdapter, { binary: '/nonexistent/hermes' });
    dirs.push(run.root);
    expect(terminalOf(run.events).outcome).toMatchObject({ status: 'blocked', raw: 'spawn:ENOENT' });
  });

  it('check() gates on version 0.14.0 and reports the output format', async () => {
    const ctx = (scenario: string) => ({
      spawn: spawnGroup,
      fetch: globalThis.fetch,
      now: Date.now,
      env: { ...process.env, UH_FAKE_SCENARIO: scenario },
    });
    const config = hermesAdapter.configSchema.parse({ binary: FAKE });
    const good = await hermesAdapter.check(config, ctx('success'));
    expect(good).toMatchObject({ ok: true, version: '0.14.2', details: { stream_json: true, format: 'stream-json' } });
    const old = await hermesAdapter.check(config, ctx('version-old'));
    expect(old).toMatchObject({ ok: false, version: '0.12.0' });
    expect(old.summary).toContain('older than 0.14.0');
    const missing = await hermesAdapter.check(
      hermesAdapter.configSchema.parse({ binary: 'no-such-hermes' }),
      ctx('success'),
    );
    expect(missing.ok).toBe(false);
  });

  it('a too-old CLI still runs, in text mode', async () => {
    const run = await hermes('version-old');
    expect(terminalOf(run.events)).toMatchObject({ outcome: { status: 'completed' }, format: 'text' });
  });

  it('rejects unknown config keys', () => {
    expect(hermesAdapter.configSchema.safeParse({ toolset: ['x'] }).success).toBe(false);
    expect(hermesAdapter.configSchema.safeParse({ format: 'yaml' }).success).toBe(false);
  });
});
