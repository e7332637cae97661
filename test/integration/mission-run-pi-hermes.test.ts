/**
 * `uh mission run` end to end with the pi and hermes runtimes: the REAL pi (pinned, from
 * scripts/install-real-runtimes.sh) against the scripted Chat Completions server, and the fake
 * hermes. The receipt must carry the runtime session id, token usage, the diff and the final
 * message; no secret may reach the receipt or events.jsonl.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startChatServer, type ChatServer } from '../support/chat-server.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { removeDir, tempDir } from '../support/temp.js';

const FAKE_HERMES = fileURLToPath(new URL('../fixtures/bin/fake-hermes.mjs', import.meta.url));
const FAKE_PI = fileURLToPath(new URL('../fixtures/bin/fake-pi.mjs', import.meta.url));
const API_KEY = 'sk-uh-mission-pi-8e2c41d0';
let server: ChatServer;
let home: string;
let repo: string;
let cacheDir: string;
const created: string[] = [];

beforeAll(async () => {
  server = await startChatServer();
  home = tempDir('uh-pi-home-');
  mkdirSync(join(home, '.pi', 'agent'), { recursive: true });
  writeFileSync(
    join(home, '.pi', 'agent', 'models.json'),
    JSON.stringify({
      providers: {
        uhmock: {
          baseUrl: server.url,
          api: 'openai-completions',
          apiKey: 'UH_MOCK_API_KEY',
          models: [{ id: 'uh-scripted' }],
        },
      },
    }),
  );
  writeFileSync(
    join(home, '.pi', 'agent', 'settings.json'),
    JSON.stringify({ retry: { enabled: false, provider: { maxRetries: 0 } } }),
  );
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-cache-');
  created.push(home, repo, cacheDir);
});
afterAll(async () => {
  await server?.close();
  created.forEach(removeDir);
});

async function missionRun(runtime: string, overrides: Record<string, unknown>, sampleMemory = false) {
  const operationId = `op-${runtime}-${process.pid}`;
  const dir = tempDir('uh-mission-');
  const stateDir = tempDir('uh-state-');
  created.push(dir, stateDir);
  const mission = {
    schema_version: 'uh.mission.v0',
    mission_id: `m-${runtime}`,
    operation_id: operationId,
    title: `Hello through ${runtime}`,
    objective: 'Create hello.txt with a greeting.',
    repository: { url: repo, ref: 'main' },
    runtime,
    runtime_config_overrides: { [runtime]: overrides },
    verification: [{ name: 'hello-exists', argv: ['test', '-s', 'hello.txt'], timeout_seconds: 30 }],
    timeout_seconds: 120,
  };
  writeFileSync(join(dir, 'mission.yaml'), stringify(mission));
  const result = await runCli(['mission', 'run', join(dir, 'mission.yaml'), '--json', '--state-dir', stateDir], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir, HOME: home },
    sampleMemory,
  });
  const opDir = join(stateDir, 'operations', operationId);
  return {
    result,
    receipt: JSON.parse(result.stdout),
    events: readFileSync(join(opDir, 'events.jsonl'), 'utf8'),
    opDir,
    peakRssKb: result.peakRssKb,
  };
}

describe('uh mission run with pi and hermes', () => {
  it('real pi: the receipt carries the session id, usage, diff and final message', async () => {
    await server.script(
      [
        {
          kind: 'tool_calls',
          calls: [{ name: 'write', arguments: { path: 'hello.txt', content: 'hello via uh and pi\n' } }],
          usage: { prompt_tokens: 100, completion_tokens: 10 },
        },
        {
          kind: 'text',
          text: 'Done.\n```uh-runtime-final-message\nWrote hello.txt through pi.\n```\n',
          usage: { prompt_tokens: 140, completion_tokens: 12 },
        },
      ],
      API_KEY,
    );
    const { result, receipt, events, opDir } = await missionRun('pi', {
      binary: realRuntimeBinary('pi'),
      provider: 'uhmock',
      model: 'uh-scripted',
      env: { UH_MOCK_API_KEY: API_KEY },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(receipt).toMatchObject({
      status: 'completed',
      verdict: 'verified',
      runtime: { adapter_id: 'pi', runtime_kind: 'pi' },
      changed_files: [{ path: 'hello.txt', status: 'added' }],
      usage: { input_tokens: 240, output_tokens: 22, total_tokens: 262 },
      final_message: 'Wrote hello.txt through pi.',
      final_message_source: 'sentinel',
    });
    expect(receipt.runtime.session_id).toMatch(/^[0-9a-f]{8}-/);
    // Default-deny egress: pi (Node 20's fetch ignores HTTPS_PROXY) reached the models.json baseUrl
    // the adapter declared through the transparent forwarder (docs/security.md "Network").
    const model = new URL(server.url).host;
    expect(receipt.isolation).toMatchObject({ kind: 'bwrap', network: 'egress' });
    expect(receipt.isolation.egress.allowed).toContain(model);
    expect(receipt.isolation.egress.asked).toContain(model);
    expect(readFileSync(join(opDir, 'diff.patch'), 'utf8')).toContain('+hello via uh and pi');
    expect(events).toContain('"runtime.tool_call"');
    expect(JSON.stringify(receipt) + events).not.toContain(API_KEY);
  });

  it('fake hermes: the receipt carries the session id and usage from the stream-json result', async () => {
    const { result, receipt, events } = await missionRun('hermes', {
      binary: FAKE_HERMES,
      env: { UH_FAKE_SCENARIO: 'success', OPENROUTER_API_KEY: API_KEY },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(receipt).toMatchObject({
      status: 'completed',
      verdict: 'verified',
      runtime: { adapter_id: 'hermes', session_id: '20261130_101500_fa4e01' },
      usage: { input_tokens: 5000, output_tokens: 200, total_tokens: 5200, cached_input_tokens: 1200 },
      final_message: 'Created hello.txt with a greeting from Hermes.',
    });
    expect(JSON.stringify(receipt) + events).not.toContain(API_KEY);
  });

  it('fake hermes auth failure: blocked, exit code 3', async () => {
    const { result, receipt } = await missionRun('hermes', { binary: FAKE_HERMES, env: { UH_FAKE_SCENARIO: 'auth' } });
    expect(result.code).toBe(3);
    expect(receipt).toMatchObject({ status: 'blocked', outcome: { raw: 'provider:auth' } });
  });

  it('keeps memory flat while pi prints 150 MB of JSONL (and one line over the cap)', async () => {
    const { result, receipt, opDir, peakRssKb } = await missionRun(
      'pi',
      { binary: FAKE_PI, env: { UH_FAKE_SCENARIO: 'huge', FAKE_PI_HUGE_MB: '150' } },
      true,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(receipt.final_message).toBe('Created hello.txt with a greeting.');
    const size = readdirSync(opDir)
      .filter((f) => f.endsWith('.stdout.jsonl'))
      .map((f) => statSync(join(opDir, f)).size);
    expect(Math.max(...size)).toBeGreaterThan(150 * 1024 * 1024);
    expect(peakRssKb).toBeGreaterThan(0);
    expect(peakRssKb).toBeLessThan(200 * 1024); // far below the 150 MB printed
  });
});
