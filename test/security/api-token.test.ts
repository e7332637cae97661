/**
 * The API always wants a token (docs/security.md "The HTTP API"). Without UH_API_TOKEN `uh api
 * start` refuses to start; `--insecure-loopback` mints one into `<cache>/api-token` (0600), which
 * this user's clients read and no sandbox can: an agent run by a worker of the same host and
 * cache dir, under bwrap with the host's network (so that it reaches the API at all), finds the
 * file masked and has every tokenless or guessed request refused with 401.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiTokenFile } from '../../src/producers/http/api-config.js';
import { runCli, UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { hostileMission, requireBwrap } from './isolation-helpers.js';

/** The agent: can it read the token file, and what does the API answer it without the token? */
const PROBE = [
  'code() { curl -s -o /dev/null -w "%{http_code}" "$@"; }',
  '{ if cat "$PROBE_FILE" >/dev/null 2>&1; then echo "token-file: readable"; else echo "token-file: unreadable"; fi',
  '  echo "tokenless: $(code "$API/v1/operations/$OP")"',
  '  echo "guessed: $(code -H "authorization: Bearer guessed-token-0123456789" "$API/v1/operations/$OP/diff")"',
  '  echo "cancel: $(code -X POST "$API/v1/operations/$OP/cancel")"',
  '  echo "healthz: $(code "$API/healthz")"; } > probe.txt',
].join('\n');

let redis: TestRedis;
let repo: string;
const dirs: string[] = [];
const dir = (p: string) => (dirs.push(tempDir(p)), dirs[dirs.length - 1] as string);

async function startApi(args: string[], env: Record<string, string>): Promise<{ api: ChildProcess; base: string }> {
  const api = spawn(process.execPath, [UH_BIN, 'api', 'start', '--port', '0', ...args], {
    cwd: repo,
    env: { ...process.env, ...env, UH_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    api.stdout?.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    api.on('close', (code) => reject(new Error(`api exited ${code}: ${out}`)));
  });
  return { api, base };
}

beforeAll(async () => {
  requireBwrap();
  redis = await startTestRedis('apitoken');
  repo = makeRepo({ 'README.md': '# api token\n' });
  dirs.push(repo);
});
afterAll(async () => {
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

describe('the API without UH_API_TOKEN', () => {
  it('refuses to start, naming UH_API_TOKEN and --insecure-loopback; beyond loopback too', async () => {
    const env = { REDIS_URL: redis.url, UH_REDIS_PREFIX: redis.prefix('none'), UH_CACHE_DIR: dir('uh-at-c-') };
    const plain = await runCli(['api', 'start', '--port', '0'], { cwd: repo, env: { ...env, UH_API_TOKEN: '' } });
    expect(plain.code, plain.stderr).toBe(2);
    expect(plain.stderr).toContain('UH_API_TOKEN: the API requires a bearer token');
    expect(plain.stderr).toContain('--insecure-loopback');
    const wide = await runCli(['api', 'start', '--port', '0', '--host', '0.0.0.0', '--insecure-loopback'], {
      cwd: repo,
      env: { ...env, UH_API_TOKEN: '' },
    });
    expect(wide.code, wide.stderr).toBe(2);
    expect(wide.stderr).toContain('--insecure-loopback: --host 0.0.0.0 is not a loopback address');
  });
});

describe('--insecure-loopback, and an agent in a bwrap sandbox on the same host', () => {
  let worker: WorkerProcess;
  let api: ChildProcess;
  let base: string;
  let cache: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    cache = dir('uh-at-cache-');
    env = {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: redis.prefix('lo'),
      UH_CACHE_DIR: cache,
      UH_API_TOKEN: '',
      UH_ALLOW_LOCAL_REPOS: '1',
    };
    // The host's network, so that the agent's requests reach the token check (egress would stop them first).
    env.UH_ALLOW_MISSION_NETWORK_HOST = '1';
    ({ api, base } = await startApi(['--insecure-loopback', '--state-dir', dir('uh-at-api-')], env));
    worker = await startWorker(['--runtime', 'command', '--state-dir', dir('uh-at-w-')], {
      cwd: repo,
      env: {
        ...env,
        UH_ISOLATION: 'require',
      },
    });
  });
  afterAll(async () => {
    api?.kill('SIGTERM');
    await worker?.stop('SIGTERM');
  });

  it('mints a 0600 token file; tokenless requests from the host are refused with 401', async () => {
    const file = apiTokenFile(cache);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const token = readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect((await fetch(`${base}/v1/operations/nope`)).status).toBe(401);
    expect((await fetch(`${base}/v1/operations/nope`, { headers: { authorization: 'Bearer x' } })).status).toBe(401);
    const withToken = await fetch(`${base}/v1/operations/nope`, { headers: { authorization: `Bearer ${token}` } });
    expect(withToken.status).toBe(404);
  });

  it("the agent cannot read the token file and the API refuses its requests; uh's own client gets through", async () => {
    // OP is the agent's own operation: one that exists, and that it would cancel.
    const operationId = `op-apitoken-${process.pid}`;
    const patched = hostileMission(repo, PROBE.replaceAll('$OP', operationId), {
      operation_id: operationId,
      sandbox: { network: 'host', env: { API: base, PROBE_FILE: apiTokenFile(cache) } },
    });
    // The CLI client (no UH_API_TOKEN, no --token) reads <cache>/api-token for a loopback API.
    const submitted = await runCli(['mission', 'submit', patched.path, '--api', base, '--wait', '--json'], {
      cwd: repo,
      env: { ...env, UH_LOG_LEVEL: 'silent' },
    });
    expect(submitted.code, submitted.stderr).toBe(0);
    const token = readFileSync(apiTokenFile(cache), 'utf8').trim();
    const auth = { authorization: `Bearer ${token}` };
    const receipt = (await (await fetch(`${base}/v1/operations/${operationId}/receipt`, { headers: auth })).json()) as {
      isolation: { kind: string };
    };
    expect(receipt.isolation.kind).toBe('bwrap');
    const diff = await (await fetch(`${base}/v1/operations/${operationId}/diff`, { headers: auth })).text();
    expect(diff).toContain('+token-file: unreadable');
    expect(diff).toContain('+tokenless: 401');
    expect(diff).toContain('+guessed: 401');
    expect(diff).toContain('+cancel: 401');
    // It did reach the API: the one public route answers it.
    expect(diff).toContain('+healthz: 200');
  });
});
