/**
 * The exported client (src/producers/client) over both transports, against a worker and
 * `uh api start` as separate OS processes on a real Redis: submit, watch, wait, collect, cancel,
 * and the CLI's errors and exit codes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, exitCodeOf, UhError, type UhClient, type UhEvent } from '../../src/producers/client/index.js';
import { FAKE_AGENT, UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

const TOKEN = 'uh-client-token-1f2e3d';
let redis: TestRedis;
let worker: WorkerProcess;
let api: ChildProcess;
let apiUrl: string;
let repo: string;
let prefix: string;
const dirs: string[] = [];

beforeAll(async () => {
  redis = await startTestRedis('client');
  prefix = redis.prefix('client');
  repo = makeRepo({ 'README.md': '# client\n' });
  const cacheDir = tempDir('uh-client-cache-');
  const stateDir = tempDir('uh-client-state-');
  const artifacts = tempDir('uh-client-artifacts-');
  dirs.push(repo, cacheDir, stateDir, artifacts);
  // One artifact store for the worker, the API and the in-process client (which reads the UH_*
  // settings of this process, as the CLI does): the fleet's hosts must all name the same one.
  process.env.UH_ARTIFACT_STORE = `dir:${artifacts}`;
  const env = {
    ...process.env,
    REDIS_URL: redis.url,
    UH_REDIS_PREFIX: prefix,
    UH_CACHE_DIR: cacheDir,
    UH_LOG_LEVEL: 'silent',
    UH_HEARTBEAT_MS: '500',
  };
  worker = await startWorker(['--runtime', 'command', '--state-dir', stateDir], { cwd: repo, env });
  api = spawn(process.execPath, [UH_BIN, 'api', 'start', '--port', '0', '--state-dir', stateDir], {
    cwd: repo,
    env: { ...env, UH_API_TOKEN: TOKEN, UH_ALLOW_LOCAL_REPOS: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  apiUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    api.stdout?.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    api.stderr?.on('data', (c) => (out += c));
    api.on('close', (code) => reject(new Error(`api exited ${code}: ${out}`)));
  });
}, 30_000);

afterAll(async () => {
  api?.kill('SIGTERM');
  await worker?.stop('SIGTERM');
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

let n = 0;
function mission(agent: string[]) {
  return {
    schema_version: 'uh.mission.v0',
    mission_id: 'client',
    operation_id: `client-${process.pid}-${++n}`,
    title: 'From the client',
    objective: 'Write client.txt',
    repository: { url: repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: [process.execPath, FAKE_AGENT, ...agent], kill_grace_ms: 500 } },
    timeout_seconds: 60,
  };
}

const TRANSPORTS = ['redis', 'http'] as const;

describe.each(TRANSPORTS)('client over %s', (transport) => {
  let uh: UhClient;
  beforeAll(async () => {
    uh =
      transport === 'redis'
        ? await createClient({ redisUrl: redis.url, prefix, stateDir: tempDir('uh-client-producer-') })
        : await createClient({ apiUrl, token: TOKEN });
  });
  afterAll(() => uh?.close());

  it('submit, watch, wait, collect; a resubmission attaches', async () => {
    const m = mission(['edit', 'client.txt', 'hello from the client']);
    const submitted = await uh.submit(m);
    expect(submitted).toMatchObject({ operationId: m.operation_id, attached: false });
    const types: string[] = [];
    for await (const e of uh.watch(m.operation_id) as AsyncIterable<UhEvent>) types.push(e.type);
    expect(types).toContain('operation.completed');
    const settled = await uh.wait(m.operation_id);
    expect(settled).toMatchObject({
      state: 'finished',
      exitCode: 0,
      receipt: { status: 'completed', verdict: 'unverified' },
    });
    expect((await uh.submit(m)).attached).toBe(true);
    const out = tempDir('uh-client-out-');
    dirs.push(out);
    const collected = await uh.collect(m.operation_id, out);
    expect(readFileSync(join(out, 'diff.patch'), 'utf8')).toContain('+hello from the client');
    expect(existsSync(join(out, 'receipt.json'))).toBe(true);
    expect(collected.receipt?.operation_id).toBe(m.operation_id);
  }, 40_000);

  it('cancel: wait settles with exit code 4; errors carry the CLI kinds and exit codes', async () => {
    const m = mission(['hang']);
    await uh.submit(m);
    const deadline = Date.now() + 15_000;
    while ((await uh.attach(m.operation_id)).state !== 'running' && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(await uh.cancel(m.operation_id, 'client test')).toMatch(/cancel/);
    const settled = await uh.wait(m.operation_id, { timeoutMs: 20_000 });
    expect(settled).toMatchObject({ state: 'finished', exitCode: 4, receipt: { status: 'cancelled' } });
    const failures = await Promise.all([
      uh.attach('no-such-operation').catch((e: unknown) => e),
      uh.submit({ ...m, objective: 'another contract' }).catch((e: unknown) => e),
      uh.submit({ ...m, operation_id: 'bad id with spaces' }).catch((e: unknown) => e),
    ]);
    expect(failures.map((e) => (UhError.isInstance(e) ? [e.kind, exitCodeOf(e)] : String(e)))).toEqual([
      ['not_found', 2],
      ['conflict', 2],
      ['invalid_input', 2],
    ]);
  }, 40_000);
});
