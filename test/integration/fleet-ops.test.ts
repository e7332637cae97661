/**
 * Fleet operations (issue 31): the results worker is a worker (heartbeat with role `results`,
 * listed in /v1/workers and `uh_workers_live{role="results"}`, its `kill -9` seen by `uh doctor
 * --redis` within 15 s once the outbox lags), and an `unknown` operation recovered from the API
 * with the admin token. Real Redis, real worker processes, the API in this process.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { runCli, type CliResult } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { metricsUrlOf } from '../support/worker-log.js';

process.env.UH_ISOLATION = 'off';

const TOKEN = 'fleet-ops-token-0123456789abcdef-012345';
const auth = { authorization: `Bearer ${TOKEN}` };
let redis: TestRedis;
let repo: string;
let cacheDir: string;
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
const servers: Array<{ app: FastifyInstance; client: QueueClient }> = [];

beforeAll(async () => {
  redis = await startTestRedis('fleet-ops');
  repo = makeRepo({ 'README.md': '# ops\n' });
  cacheDir = tempDir('uh-ocache-');
  dirs.push(repo, cacheDir);
});

afterAll(async () => {
  for (const { app, client } of servers) {
    app.server.closeAllConnections();
    await app.close();
    await client.close();
  }
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

const state = () => {
  const d = tempDir('uh-ostate-');
  dirs.push(d);
  return d;
};
const env = (prefix: string) => ({ REDIS_URL: redis.url, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir });
const uh = (prefix: string, args: string[]): Promise<CliResult> => runCli(args, { cwd: repo, env: env(prefix) });
async function worker(prefix: string, args: string[]): Promise<WorkerProcess> {
  const w = await startWorker(['--state-dir', state(), ...args], {
    cwd: repo,
    env: { ...env(prefix), UH_LOG_LEVEL: 'warn' },
  });
  workers.push(w);
  return w;
}

/** The API in this process on `prefix`. */
async function api(prefix: string): Promise<string> {
  // The fleet's receipt key as the workers of this file use it (the default key in their cache dir).
  const config = loadConfig({ UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir });
  const client = await QueueClient.open(config.queue, redis.url);
  const app = await buildApiServer({
    client,
    config: readApiConfig({ UH_API_TOKEN: TOKEN }, '127.0.0.1'),
    stateDir: state(),
    cacheDir,
    baseDir: repo,
    repositoryPolicy: { allowLocal: true, allowHttp: false },
    prices: {},
    receiptKey: config.receipts,
    promotionIdentity: { author: { name: 'T', email: 't@localhost' }, committer: { name: 'T', email: 't@localhost' } },
  });
  servers.push({ app, client });
  return app.listen({ port: 0, host: '127.0.0.1' });
}
const get = async (base: string, path: string) => (await fetch(`${base}${path}`, { headers: auth })).json();

type Doctor = { code: number; ok: boolean; results: { ok: boolean; detail: string } | undefined; lag: number };
async function doctor(prefix: string): Promise<Doctor> {
  const r = await uh(prefix, ['doctor', '--json', '--redis', redis.url]);
  const body = JSON.parse(r.stdout) as {
    ok: boolean;
    findings: Array<{ what: string; ok: boolean; detail: string }>;
    fleet: { outbox_lag: number };
  };
  const results = body.findings.find((f) => f.what === 'results worker');
  return { code: r.code ?? -1, ok: body.ok, results, lag: body.fleet.outbox_lag };
}

describe('the results worker is a worker', () => {
  it('is listed with role results, counted in uh_workers_live, and its kill -9 seen within 15 s and failing uh doctor --redis once the outbox lags', async () => {
    const prefix = redis.prefix('results');
    const base = await api(prefix);
    const results = await worker(prefix, ['--results', '--metrics-port', '0']);
    await worker(prefix, ['--runtime', 'command']);
    const { workers: listed } = (await get(base, '/v1/workers')) as { workers: Array<Record<string, unknown>> };
    expect(listed.map((w) => w.role).sort()).toEqual(['results', 'runtime']);
    expect(listed.find((w) => w.role === 'results')).toMatchObject({ runtimes: [], pid: results.pid });
    const metricsUrl = metricsUrlOf(results.output());
    const scraped = await (await fetch(metricsUrl)).text();
    expect(scraped).toMatch(/^uh_workers_live\{role="results"\} 1$/m);
    expect(scraped).toMatch(/^uh_workers_live\{role="runtime",runtime="command"\} 1$/m);
    expect(await doctor(prefix)).toMatchObject({ code: 0, results: { ok: true, detail: '1 live' } });

    await results.stop('SIGKILL');
    const killedAt = Date.now();
    const roles = async () =>
      ((await get(base, '/v1/workers')) as { workers: Array<{ role: string }> }).workers.map((w) => w.role);
    expect(await waitFor(async () => !(await roles()).includes('results'), 30_000, 100)).toBe(true);
    const noticedMs = Date.now() - killedAt;
    process.stderr.write(`fleet-ops: kill -9 of the results worker → gone from /v1/workers in ${noticedMs} ms\n`);
    expect(noticedMs).toBeLessThan(15_000);
    expect((await doctor(prefix)).code).toBe(0); // nothing waits in the outbox yet
    // A mission settles after the results worker died: its outbox entry waits for a consumer.
    const submitted = await uh(prefix, [
      'mission',
      'submit',
      writeMission(repo, ['edit', 'ops.txt', 'x']).path,
      '--wait',
      '--state-dir',
      state(),
    ]);
    expect(submitted.code).toBe(0);
    const stalled = await doctor(prefix);
    expect(stalled).toMatchObject({
      code: 3,
      ok: false,
      results: { ok: false, detail: expect.stringMatching(/^none live; 1 entr/) },
    });
    const text = await uh(prefix, ['doctor', '--redis', redis.url]);
    expect(text.stdout).toMatch(/✖ results worker\s+none live; 1 entry not yet delivered/);
    expect(text.stdout).toContain('hint: start one (uh worker start --results)');
    expect(text.stdout).not.toContain('ready to run missions');
    const after = (await get(base, '/v1/workers')) as { workers: Array<Record<string, unknown>> };
    expect(after.workers.map((w) => w.role)).toEqual(['runtime']);
    const metrics = await (await fetch(`${base}/metrics`, { headers: auth })).text();
    expect(metrics).toMatch(/^uh_workers_live\{role="results"\} 0$/m);

    // A new results worker drains the outbox: doctor is green again.
    await worker(prefix, ['--results']);
    expect(await waitFor(async () => (await doctor(prefix)).code === 0, 30_000, 250)).toBe(true);
  });
});

const scrape = async (base: string) => (await fetch(`${base}/metrics`, { headers: auth })).text();
/** The value of one sample (labels written as prom-client writes them), or null when absent. */
function value(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : null;
}
const opState = async (prefix: string, id: string) =>
  JSON.parse((await uh(prefix, ['mission', 'status', id, '--json', '--state-dir', state()])).stdout).operation?.state;

describe('metrics an alert can rely on', () => {
  it('process metrics, queue age; a mission cancelled while queued adds no duration sample', async () => {
    const prefix = redis.prefix('metrics');
    const base = await api(prefix);
    const queued = writeMission(repo, ['noop']);
    expect((await uh(prefix, ['mission', 'submit', queued.path, '--state-dir', state()])).code).toBe(0);
    expect(
      await waitFor(
        async () => (value(await scrape(base), 'uh_queue_oldest_waiting_seconds{runtime="command"}') ?? 0) >= 1,
        10_000,
        200,
      ),
    ).toBe(true);
    expect((await uh(prefix, ['mission', 'cancel', queued.operationId, '--state-dir', state()])).code).toBe(0);
    await worker(prefix, ['--runtime', 'command']);
    const ran = writeMission(repo, ['noop']);
    expect((await uh(prefix, ['mission', 'submit', ran.path, '--wait', '--state-dir', state()])).code).toBe(0);
    const text = await scrape(base);
    expect(
      value(
        text,
        'uh_operations_settled_total{runtime="command",state="finished",status="cancelled",verdict="unverified"}',
      ),
    ).toBe(1);
    // One sample: the mission that ran. The one cancelled while queued waited; it did not run.
    expect(value(text, 'uh_phase_duration_seconds_count{runtime="command",phase="total"}')).toBe(1);
    expect(value(text, 'uh_queue_oldest_waiting_seconds{runtime="command"}')).toBe(0);
    expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(text).toMatch(/^uh_worker_disk_free_bytes\{worker="[^"]+",host="[^"]+"\} [1-9]\d*$/m);
    expect(value(text, 'uh_webhook_dead_letters')).toBe(0);
  });

  it("a dead worker's job is not counted active once its operation is unknown (BullMQ still holds it active)", async () => {
    const prefix = redis.prefix('active');
    const base = await api(prefix);
    await worker(prefix, ['--results']);
    const victim = await worker(prefix, ['--runtime', 'command']);
    const count = join(state(), 'n');
    const slow = writeMission(repo, ['count', count, 'slow', '60000']);
    expect((await uh(prefix, ['mission', 'submit', slow.path, '--state-dir', state()])).code).toBe(0);
    const active = async () => value(await scrape(base), 'uh_queue_jobs{runtime="command",state="active"}');
    // Killed once its agent runs (a runtime that never started would go back to queued, not unknown).
    expect(await waitFor(() => existsSync(count), 20_000, 100)).toBe(true);
    expect(await active()).toBe(1);
    await victim.stop('SIGKILL');
    expect(await waitFor(async () => (await opState(prefix, slow.operationId)) === 'unknown', 20_000, 250)).toBe(true);
    expect(await active()).toBe(0);
    const { queues } = (await get(base, '/v1/queues')) as {
      queues: Array<{ runtime: string; jobs: Record<string, number> }>;
    };
    expect(queues.find((q) => q.runtime === 'command')?.jobs.active).toBe(0);
    const bull = `{${prefix}}:bull:runtime.command:active`;
    expect(await redis.redis.llen(bull)).toBe(1);
  });
});

describe('recover from the API', () => {
  it('POST /v1/operations/:id/recover settles an unknown operation with a signed receipt, behind the token, never re-run', async () => {
    const prefix = redis.prefix('recover');
    const base = await api(prefix);
    await worker(prefix, ['--results']);
    const victim = await worker(prefix, ['--runtime', 'command']);
    const count = join(state(), 'n');
    const slow = writeMission(repo, ['count', count, 'slow', '60000']);
    expect((await uh(prefix, ['mission', 'submit', slow.path, '--state-dir', state()])).code).toBe(0);
    expect(await waitFor(() => existsSync(count), 20_000, 100)).toBe(true);
    await victim.stop('SIGKILL');
    expect(await waitFor(async () => (await opState(prefix, slow.operationId)) === 'unknown', 20_000, 250)).toBe(true);

    const path = `${base}/v1/operations/${slow.operationId}/recover`;
    const json = { 'content-type': 'application/json' };
    expect((await fetch(path, { method: 'POST', headers: json, body: '{}' })).status).toBe(401);
    const bad = await fetch(path, { method: 'POST', headers: { ...auth, ...json }, body: '{"settle":"passed"}' });
    expect(bad.status).toBe(400);
    const none = await fetch(`${base}/v1/operations/no-such-op/recover`, {
      method: 'POST',
      headers: { ...auth, ...json },
      body: '{}',
    });
    expect(none.status).toBe(404);
    const res = await fetch(path, { method: 'POST', headers: { ...auth, ...json }, body: '{"settle":"cancelled"}' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { steps: string[]; operation: { state: string; status: string } };
    expect(body.steps.join('\n')).toMatch(/unknown → settled as cancelled with a receipt \(not re-run\)/);
    expect(body.operation).toMatchObject({ state: 'finished', status: 'cancelled' });
    // The receipt is signed and trusted like every other: status says so with the cancelled exit code.
    const status = await uh(prefix, ['mission', 'status', slow.operationId, '--json', '--state-dir', state()]);
    expect(status.code).toBe(4);
    const again = (await (await fetch(path, { method: 'POST', headers: { ...auth, ...json }, body: '{}' })).json()) as {
      steps: string[];
    };
    expect(again.steps.join('\n')).toContain('nothing to recover');
    expect(readFileSync(count, 'utf8').trim().split('\n')).toHaveLength(1);
  });
});
