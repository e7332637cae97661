/**
 * `uh api start` end to end: the API and a worker as separate OS processes on a real Redis; a
 * client submits over HTTP, follows the SSE events to the end, reads receipt, diff and final
 * message; auth, bad input, conflicts and unknown ids get the right status codes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_AGENT, UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

const TOKEN = 'uh-api-token-5d0c1f7e9a';
let redis: TestRedis;
let api: ChildProcess;
let worker: WorkerProcess;
let base = '';
let repo: string;
const dirs: string[] = [];

beforeAll(async () => {
  redis = await startTestRedis('http-api');
  repo = makeRepo({ 'README.md': '# api\n' });
  const cacheDir = tempDir('uh-cache-');
  const stateDir = tempDir('uh-state-');
  dirs.push(repo, cacheDir, stateDir);
  const env = {
    ...process.env,
    REDIS_URL: redis.url,
    UH_REDIS_PREFIX: redis.prefix('api'),
    UH_CACHE_DIR: cacheDir,
    UH_LOG_LEVEL: 'silent',
    UH_ALLOW_LOCAL_REPOS: '1',
  };
  worker = await startWorker(['--runtime', 'command', '--state-dir', stateDir], { cwd: repo, env });
  api = spawn(process.execPath, [UH_BIN, 'api', 'start', '--port', '0', '--state-dir', stateDir], {
    cwd: repo,
    env: { ...env, UH_API_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  base = await new Promise<string>((resolve, reject) => {
    let out = '';
    api.stdout?.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    api.stderr?.on('data', (c) => (out += c));
    api.on('close', (code) => reject(new Error(`api exited ${code}: ${out}`)));
  });
});

afterAll(async () => {
  api?.kill('SIGTERM');
  await worker?.stop('SIGTERM');
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

const auth = { authorization: `Bearer ${TOKEN}` };
const post = (path: string, body: unknown, headers: Record<string, string> = auth) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

function mission(operationId: string, objective = 'Write api.txt') {
  return {
    schema_version: 'uh.mission.v0',
    mission_id: 'api',
    operation_id: operationId,
    title: 'Through the API',
    objective,
    repository: { url: repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: [process.execPath, FAKE_AGENT, 'edit', 'api.txt', 'from the api'] } },
  };
}

describe('uh api start', () => {
  it('answers /healthz without a token and refuses everything else without one', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const denied = await post('/v1/missions', mission('api-denied'), {});
    expect(denied.status).toBe(401);
    const wrong = await post('/v1/missions', mission('api-denied'), { authorization: 'Bearer nope' });
    expect(wrong.status).toBe(401);
  });

  it('submits, streams the events to the end, and serves receipt, diff and final message', async () => {
    const created = await post('/v1/missions', mission('api-001'));
    expect(created.status).toBe(201);
    const body = await created.json();
    expect(body).toMatchObject({
      kind: 'created',
      operation: { operation_id: 'api-001' },
      links: { events: '/v1/operations/api-001/events' },
    });
    expect(JSON.stringify(body)).not.toContain('runtime_config_overrides'); // the job payload stays private

    const events = await fetch(`${base}/v1/operations/api-001/events`, { headers: auth });
    expect(events.headers.get('content-type')).toContain('text/event-stream');
    const text = await events.text(); // the server ends the stream once the operation settles
    expect(text).toContain('event: operation.queued');
    expect(text).toContain('event: runtime.finished');
    expect(text).toMatch(
      /event: end\ndata: \{"state":"finished","status":"completed","verdict":"unverified","exit_code":0\}/,
    );

    const receipt = await (await fetch(`${base}/v1/operations/api-001/receipt`, { headers: auth })).json();
    expect(receipt).toMatchObject({
      operation_id: 'api-001',
      status: 'completed',
      changed_files: [{ path: 'api.txt', status: 'added' }],
    });
    expect(await (await fetch(`${base}/v1/operations/api-001/diff`, { headers: auth })).text()).toContain(
      '+from the api',
    );
    expect(await (await fetch(`${base}/v1/operations/api-001/final-message`, { headers: auth })).text()).toBe(
      'Edited api.txt.',
    );
    const status = await (await fetch(`${base}/v1/operations/api-001`, { headers: auth })).json();
    expect(status).toMatchObject({ operation: { state: 'finished' }, receipt: { verdict: 'unverified' } });

    const again = await post('/v1/missions', mission('api-001'));
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ kind: 'attached' });
    const conflict = await post('/v1/missions', mission('api-001', 'Something else'));
    expect(conflict.status).toBe(409);
    expect(((await conflict.json()) as { error: unknown }).error).toMatchObject({
      kind: 'conflict',
      name: 'OperationConflict',
    });
  });

  it('rejects a bad mission with 400 and one line per problem, naming the path', async () => {
    const bad = { ...mission('api-bad'), objectve: 'typo', timeout_seconds: 'soon' };
    const r = await post('/v1/missions', bad);
    expect(r.status).toBe(400);
    const { error } = (await r.json()) as { error: { kind: string; details: string[] } };
    expect(error.kind).toBe('invalid_input');
    expect(error.details).toEqual(
      expect.arrayContaining(['objectve: unknown key', expect.stringContaining('timeout_seconds')]),
    );
    const notJson = await fetch(`${base}/v1/missions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{oops',
    });
    expect(notJson.status).toBe(400);
    expect((await fetch(`${base}/v1/operations/nope-404`, { headers: auth })).status).toBe(404);
  });
});
