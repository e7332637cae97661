/**
 * `uh mission run` with runtime `codex`, end to end through the real CLI: the REAL codex binary
 * (scripts/install-real-runtimes.sh) against the scripted Responses server, and the fake codex
 * for an operator problem. Asserts what lands in the receipt and on disk.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../support/cli.js';
import { checkoutFingerprint, makeRepo } from '../support/git-repo.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { startResponsesServer, type ResponsesServer } from '../support/responses-server.js';
import { hostTempDir, removeDir, tempDir } from '../support/temp.js';
import { requireBwrap } from '../security/isolation-helpers.js';

const FAKE_CODEX = fileURLToPath(new URL('../fixtures/bin/fake-codex', import.meta.url));
const API_KEY = 'sk-uh-pipeline-codex-93e1a7f0';
let server: ResponsesServer;
let codexHome: string;
let repo: string;
let cacheDir: string;
const created: string[] = [];
let counter = 0;

beforeAll(async () => {
  server = await startResponsesServer({ apiKey: API_KEY });
  codexHome = tempDir('uh-codex-home-');
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-cache-');
  created.push(codexHome, repo, cacheDir);
  writeFileSync(
    join(codexHome, 'config.toml'),
    `model = "uh-scripted"\nmodel_provider = "uhmock"\n[model_providers.uhmock]\nname = "uh scripted"\nbase_url = "${server.url}"\nwire_api = "responses"\nenv_key = "UH_MOCK_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n`,
  );
});
afterAll(async () => {
  await server?.close();
  created.forEach(removeDir);
});

async function missionRun(codex: Record<string, unknown>, env: Record<string, string> = {}) {
  const operationId = `op-codex-${process.pid}-${++counter}`;
  const dir = tempDir('uh-mission-');
  const stateDir = tempDir('uh-state-');
  created.push(dir, stateDir);
  const path = join(dir, 'mission.yaml');
  writeFileSync(
    path,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: 'm-codex',
      operation_id: operationId,
      title: 'Create hello.txt',
      objective: 'Create hello.txt containing a greeting.',
      repository: { url: repo, ref: 'main' },
      runtime: 'codex',
      runtime_config_overrides: { codex },
      scope: { allowed_change_globs: ['hello.txt'] },
      timeout_seconds: 120,
    }),
  );
  const before = checkoutFingerprint(repo);
  const result = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir, ...env },
  });
  expect(checkoutFingerprint(repo)).toBe(before);
  return { ...result, receipt: JSON.parse(result.stdout) };
}

describe('uh mission run --runtime codex', () => {
  it('runs the real codex: completed, diff, final message, thread/session ids and usage in the receipt', async () => {
    await server.script([
      {
        kind: 'function_call',
        name: 'exec_command',
        arguments: { cmd: "printf 'hi from codex\\n' > hello.txt" },
        call_id: 'call_1',
      },
      {
        kind: 'message',
        text: 'Done.\n\n```uh-runtime-final-message\nWrote hello.txt.\n```\n',
        usage: { input_tokens: 500, output_tokens: 70, cached_tokens: 100, reasoning_tokens: 9 },
      },
    ]);
    const r = await missionRun({
      binary: realRuntimeBinary('codex'),
      codex_home: codexHome,
      env: { UH_MOCK_API_KEY: API_KEY },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.receipt.status).toBe('completed');
    expect(r.receipt.changed_files).toEqual([{ path: 'hello.txt', status: 'added' }]);
    expect(readFileSync(r.receipt.artifacts.diff, 'utf8')).toContain('+hi from codex');
    expect(r.receipt.final_message).toBe('Wrote hello.txt.');
    expect(r.receipt.runtime.thread_id).toMatch(/^[0-9a-f]{8}-/);
    expect(r.receipt.runtime.session_id).toBe(r.receipt.runtime.thread_id);
    // 120/30 defaults for the first request, the scripted numbers for the second.
    expect(r.receipt.usage).toEqual({
      input_tokens: 620,
      cached_input_tokens: 120,
      output_tokens: 100,
      reasoning_tokens: 14,
      total_tokens: 720,
    });
    const events = readFileSync(r.receipt.artifacts.events, 'utf8');
    expect(events).toContain('"runtime.tool_call"');
    expect(events + r.stdout + r.stderr).not.toContain(API_KEY);
  });

  it('exits 3 (blocked) with the operator hint when codex is not authenticated', async () => {
    const r = await missionRun({ binary: FAKE_CODEX, env: { FAKE_CODEX_SCENARIO: 'auth' } });
    expect(r.code).toBe(3);
    expect(r.receipt.status).toBe('blocked');
    expect(r.receipt.outcome.raw).toBe('auth');
    expect(r.receipt.outcome.hint).toMatch(/codex login/);
  });

  it("under bwrap, codex writes a copy of the configured codex_home: the user's config.toml is never rewritten", async () => {
    requireBwrap();
    const home = hostTempDir('uh-codex-user-home-'); // not /tmp: the sandbox's /tmp is private
    created.push(home);
    const config = 'model = "users-own-model"\n[model_providers.mine]\nbase_url = "http://127.0.0.1:9/v1"\n';
    writeFileSync(join(home, 'config.toml'), config);
    const r = await missionRun({
      binary: FAKE_CODEX,
      codex_home: home,
      env: { FAKE_CODEX_SCENARIO: 'success', FAKE_CODEX_TOUCH_HOME: '1' },
    });
    expect(r.receipt.status, r.stderr).toBe('completed');
    expect(r.receipt.isolation.kind).toBe('bwrap');
    // codex read the user's config (seeded) and wrote its trust entry and a rollout: into the copy.
    expect(readFileSync(r.receipt.artifacts.diff, 'utf8')).toContain('+config: model = "users-own-model"');
    expect(readFileSync(join(home, 'config.toml'), 'utf8')).toBe(config);
    expect(readdirSync(home)).toEqual(['config.toml']);
  });
});
