/**
 * `uh` end to end with the hermes-proxy runtime against the fake proxy process: adapter add and
 * check, a completed run, a blocked run (exit 3, retry_after_ms in the receipt), and no bearer or
 * extra_headers value anywhere in the state dir (events, logs, receipt, runtime result).
 */
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startFakeProxy, type FakeProxy } from '../fixtures/fake-hermes-proxy/start-fake-proxy.js';

const BEARER = 'sk-cli-hermes-proxy-bearer-51d2';
const TEAM_KEY = 'cli-team-header-secret-8e40';
let fake: FakeProxy;
let repo: string;
let cacheDir: string;
let stateDir: string;
const dirs: string[] = [];

beforeAll(async () => {
  fake = await startFakeProxy('sse-success');
  repo = makeRepo({ 'README.md': '# r\n' });
  cacheDir = tempDir('uh-cache-');
  stateDir = tempDir('uh-state-');
  dirs.push(repo, cacheDir, stateDir);
});
afterAll(async () => {
  await fake?.close();
  dirs.forEach(removeDir);
});

const env = () => ({ UH_CACHE_DIR: cacheDir });

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? allFiles(path) : [path];
  });
}

function mission(model: string) {
  return writeMission(repo, [], {
    runtime: 'hermes-proxy',
    runtime_config_overrides: {
      'hermes-proxy': { endpoint: fake.url, model, auth_token: BEARER, extra_headers: { 'x-team-key': TEAM_KEY } },
    },
  });
}

describe('uh with the hermes-proxy runtime', () => {
  it('adds the adapter and checks it against the proxy', async () => {
    expect(
      (await runCli(['adapter', 'add', 'hermes-proxy', '--state-dir', stateDir], { cwd: repo, env: env() })).code,
    ).toBe(0);
    const manifest = join(stateDir, 'adapters', 'hermes-proxy.yaml');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace('http://127.0.0.1:8645/v1', fake.url));
    const ok = await runCli(['adapter', 'check', 'hermes-proxy', '--state-dir', stateDir], { cwd: repo, env: env() });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(`proxy reachable at ${fake.url} (3 models available)`);
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace(fake.url, fake.scenarioUrl('models-locked')));
    const locked = await runCli(['adapter', 'check', 'hermes-proxy', '--state-dir', stateDir], {
      cwd: repo,
      env: env(),
    });
    expect(locked.code).toBe(3);
    expect(locked.stdout).toContain('configured but locked: upstream logged out');
  });

  it('runs a mission to a completed receipt with the sentinel as the final message', async () => {
    const m = mission('sse-success');
    const r = await runCli(['mission', 'run', m.path, '--state-dir', stateDir, '--json'], { cwd: repo, env: env() });
    expect(r.code).toBe(0);
    const receipt = JSON.parse(r.stdout);
    expect(receipt).toMatchObject({
      status: 'completed',
      final_message: 'Did the thing: café ✓ 🙂',
      final_message_source: 'sentinel',
    });
    expect(receipt.usage).toMatchObject({ input_tokens: 42, output_tokens: 17 });
    expect(receipt.runtime.session_id).toBe('chatcmpl-fake-1');
  });

  it('exits 3 on a rate limit with retry_after_ms in the receipt', async () => {
    const m = mission('rate-limited');
    const r = await runCli(['mission', 'run', m.path, '--state-dir', stateDir, '--json'], { cwd: repo, env: env() });
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).outcome).toMatchObject({ status: 'blocked', retry_after_ms: 7000 });
  });

  it('exits 3 with the re-auth hint when the upstream is logged out', async () => {
    const m = mission('auth-failed');
    const r = await runCli(['mission', 'run', m.path, '--state-dir', stateDir], { cwd: repo, env: env() });
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('hermes auth status nous');
  });

  it('leaves no bearer or extra header value in any file of the state dir', () => {
    const files = allFiles(stateDir);
    expect(files.some((f) => f.endsWith('receipt.json'))).toBe(true);
    expect(files.some((f) => f.endsWith('events.jsonl'))).toBe(true);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      expect(text, file).not.toContain(BEARER);
      expect(text, file).not.toContain(TEAM_KEY);
    }
  });
});
