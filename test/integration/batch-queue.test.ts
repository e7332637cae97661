/**
 * Batches on the queue, end to end: real Redis, two `uh worker start` pool processes and one
 * results process, real `uh batch …` producers, real git and the fake agent. A batch of
 * 3 runtimes × 3 trials is one BullMQ flow; one worker is SIGKILLed mid-batch, its child is
 * `unknown` (the report says so), `uh mission recover` settles it and the batch settles.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { loadConfig } from '../../src/shared/config.js';
import { FAKE_AGENT, runCli, type CliResult } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

// This file's fake agents coordinate with the test through files outside their sandbox (pid, gate and
// counter files), which bubblewrap isolation hides by design; isolation itself is tested in test/security/.
process.env.UH_ISOLATION = 'off';

const RUNTIMES = ['good', 'bad', 'slow'];
let redis: TestRedis;
let repo: string;
let cacheDir: string;
let work: string;
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
const orphans: number[] = [];

beforeAll(async () => {
  redis = await startTestRedis('batchq');
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-bqcache-');
  work = tempDir('uh-bq-');
  dirs.push(repo, cacheDir, work);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  for (const pid of orphans) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

function fleetEnv(prefix: string): Record<string, string> {
  return {
    REDIS_URL: redis.url,
    UH_REDIS_PREFIX: prefix,
    UH_CACHE_DIR: cacheDir,
    UH_QUEUE_LOCK_MS: '2000',
    UH_QUEUE_STALLED_INTERVAL_MS: '1000',
    UH_HEARTBEAT_MS: '500',
    // This file follows the operator's path (recover settles the batch); automatic retries are batch-suite.test.ts.
    UH_BATCH_ERROR_RETRIES: '0',
  };
}

/** A state dir with the three runtimes' manifests (every host of the fleet has them). */
function state(): string {
  const dir = tempDir('uh-bqstate-');
  dirs.push(dir);
  mkdirSync(join(dir, 'adapters'));
  for (const id of RUNTIMES)
    writeFileSync(
      join(dir, 'adapters', `${id}.yaml`),
      stringify({
        schema_version: 'uh.adapter.v0',
        id,
        name: id,
        runtime_kind: 'command',
        runtime_config: { argv: ['true'] },
      }),
    );
  return dir;
}

const uh = (prefix: string, args: string[]): Promise<CliResult> => runCli(args, { cwd: repo, env: fleetEnv(prefix) });

async function worker(prefix: string, args: string[]): Promise<WorkerProcess> {
  const w = await startWorker(['--state-dir', state(), ...args], {
    cwd: repo,
    env: { ...fleetEnv(prefix), UH_LOG_LEVEL: 'warn' },
  });
  workers.push(w);
  return w;
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

/** `slow`: its first execution hangs (the one we kill under), the later ones edit at once. */
function writeBatchMission(batchId: string, counter: string): string {
  const agent = `"${process.execPath}" "${FAKE_AGENT}"`;
  const path = join(work, `${batchId}.yaml`);
  writeFileSync(
    path,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: 'cmp',
      operation_id: batchId,
      title: 'Compare agents on the fleet',
      objective: 'Write notes.txt',
      repository: { url: repo, ref: 'main' },
      runtime: RUNTIMES,
      runtime_config_overrides: {
        good: { argv: [process.execPath, FAKE_AGENT, 'edit', 'notes.txt', 'hi'] },
        bad: { argv: [process.execPath, FAKE_AGENT, 'exit', '2'] },
        slow: {
          argv: [
            'sh',
            '-c',
            `if [ ! -s "${counter}" ]; then exec ${agent} count "${counter}" slow 60000; else exec ${agent} edit notes.txt slow; fi`,
          ],
          kill_grace_ms: 500,
        },
      },
      verification: [{ name: 'notes', argv: ['test', '-f', 'notes.txt'] }],
      timeout_seconds: 120,
    }),
  );
  return path;
}

describe('uh batch submit (queue)', () => {
  it('3 runtimes × 3 trials over 2 workers: 9 child operations, one report; a killed worker leaves its child unknown until recover settles the batch', async () => {
    const prefix = redis.prefix('flow');
    const counter = join(work, 'slow-count');
    const path = writeBatchMission('bq-001', counter);
    const producer = state();
    const w1 = await worker(prefix, ['--runtime', 'good', '--runtime', 'bad', '--runtime', 'slow']);
    const submitted = await uh(prefix, ['batch', 'submit', path, '--trials', '3', '--json', '--state-dir', producer]);
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(JSON.parse(submitted.stdout)).toMatchObject({
      batch_id: 'bq-001',
      attached: false,
      enqueued: true,
      trials: 3,
    });
    expect(JSON.parse(submitted.stdout).operations).toHaveLength(9);

    // w1 hangs in slow's first trial; then the second worker and the results worker join.
    expect(await waitFor(() => lines(counter).length === 1, 30_000)).toBe(true);
    orphans.push(Number(lines(counter)[0]));
    await worker(prefix, ['--runtime', 'good', '--runtime', 'bad', '--runtime', 'slow', '--concurrency', '2']);
    const results = await worker(prefix, ['--results']);
    await w1.stop('SIGKILL');

    // The stalled job is re-delivered to w2 after its runtime started: that child is unknown.
    const watched = await uh(prefix, ['batch', 'watch', 'bq-001', '--timeout', '90', '--json']);
    expect(watched.code, watched.stderr).toBe(5);
    expect(watched.stderr).toContain('uh mission recover');
    const report = JSON.parse(watched.stdout);
    expect(report.trials).toHaveLength(9);
    const unknown = report.trials.filter((t: { status: string }) => t.status === 'unknown');
    expect(unknown).toHaveLength(1);
    expect(unknown[0].runtime).toBe('slow');
    const [good, bad, slow] = report.runtimes;
    expect(good).toMatchObject({ runtime: 'good', passed: 3, settled: 3, pass_at_1: 1 });
    expect(bad).toMatchObject({ runtime: 'bad', passed: 0, settled: 3, statuses: { failed: 3 } });
    expect(slow).toMatchObject({ runtime: 'slow', passed: 2, settled: 2, statuses: { completed: 2, unknown: 1 } });
    expect(report.settled).toBe(false);
    const table = await uh(prefix, ['batch', 'report', 'bq-001']);
    expect(table.code).toBe(5);
    expect(table.stdout).toMatch(/slow\s+unknown \(error\)\s+-/);
    // The HTML report of a queued batch links each trial to the API named by --api-url.
    const linked = await uh(prefix, [
      'batch',
      'report',
      'bq-001',
      '--format',
      'html',
      '--api-url',
      'https://uh.example:8443',
    ]);
    expect(linked.stdout).toContain('href="https://uh.example:8443/v1/operations/bq-001.good.t1/events"');
    expect(linked.stdout).toContain('href="https://uh.example:8443/#/op/bq-001.good.t1"');
    if (redis.url === 'redis://127.0.0.1:6379') {
      // From the submitting host with neither --redis nor $REDIS_URL: the queue submit used (as mission status).
      const bare = await runCli(['batch', 'report', 'bq-001', '--k', '2', '--state-dir', producer], {
        cwd: repo,
        env: { ...fleetEnv(prefix), REDIS_URL: '' },
      });
      expect(bare.code).toBe(5);
      expect(bare.stdout).toMatch(/good\s+100% \(3\/3, 95% CI 44–100%\)\s+100% \(k=2\)/);
    }
    const status = await uh(prefix, ['batch', 'status', 'bq-001', '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: 'running', settled_at: null });
    // The flow's parent runs once every child job completed (a moment after the last child's
    // record settles, so poll for it), and found a child unknown.
    const parentKey = `{${prefix}}:bull:batch:batch.bq-001`;
    expect(await waitFor(async () => (await redis.redis.hget(parentKey, 'returnvalue')) !== null, 30_000)).toBe(true);
    const parent = await redis.redis.hget(parentKey, 'returnvalue');
    expect(JSON.parse(parent ?? '{}')).toMatchObject({ batch_id: 'bq-001', outcome: 'waiting' });

    // Never overwritten: resubmitting attaches; another runtime list is refused (exit 2).
    const again = await uh(prefix, ['batch', 'submit', path, '--trials', '3', '--json', '--state-dir', producer]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ attached: true, enqueued: false });
    const other = await uh(prefix, [
      'batch',
      'submit',
      path,
      '--runtimes',
      'good,bad',
      '--trials',
      '3',
      '--state-dir',
      producer,
    ]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('already exists with other runtimes');

    // Recover settles the unknown child; the results worker settles the batch once.
    const recovered = await uh(prefix, ['mission', 'recover', unknown[0].operation_id, '--json']);
    expect(recovered.code).toBe(1);
    await results.waitForOutput('batch-settled batch_id=bq-001', 30_000);
    const settled = await uh(prefix, ['batch', 'status', 'bq-001', '--json']);
    expect(JSON.parse(settled.stdout)).toMatchObject({ state: 'settled' });
    const final = await uh(prefix, ['batch', 'report', 'bq-001', '--format', 'json']);
    expect(final.code).toBe(1);
    expect(JSON.parse(final.stdout).runtimes[2]).toMatchObject({
      runtime: 'slow',
      statuses: { completed: 2, failed: 1 },
      // The recovered child lost its worker: an error, not the agent's failure, out of the rate.
      errors: 1,
      settled: 2,
      passed: 2,
      pass_at_1: 1,
    });
    expect(await redis.redis.hget(`{${prefix}}:batch:bq-001`, 'report_html')).toContain('<svg');
    const outbox = (await redis.redis.xrange(`{${prefix}}:outbox`, '-', '+')).filter(([, f]) => f[0] === 'batch');
    expect(outbox).toHaveLength(1);
    expect(JSON.parse(outbox[0]?.[1][1] ?? '{}')).toMatchObject({
      type: 'batch.settled',
      batch_id: 'bq-001',
      exit_code: 1,
    });
    expect(lines(counter)).toHaveLength(1); // the unknown child's runtime never ran again

    // The same batch over HTTP: the view and the self-contained HTML report.
    const AUTH = { authorization: 'Bearer batch-queue-token-3e8a1c' };
    // The workers' artifact store (the default: <UH_CACHE_DIR>/artifacts of the same cache dir).
    const client = await QueueClient.open(
      loadConfig({ UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir }).queue,
      redis.url,
    );
    const app = await buildApiServer({
      client,
      config: readApiConfig({ UH_API_TOKEN: 'batch-queue-token-3e8a1c' }, '127.0.0.1'),
      stateDir: producer,
      cacheDir: producer,
      baseDir: producer,
      repositoryPolicy: { allowLocal: true, allowHttp: false },
      prices: {},
      receiptKey: { key: 'k'.repeat(32), keyFile: '/nonexistent/receipt.key' },
      promotionIdentity: {
        author: { name: 'T', email: 't@localhost' },
        committer: { name: 'T', email: 't@localhost' },
      },
    });
    try {
      const view = await app.inject({ method: 'GET', headers: AUTH, url: '/v1/batches/bq-001' });
      expect(view.statusCode).toBe(200);
      expect(view.json()).toMatchObject({ state: 'settled' });
      const html = await app.inject({ method: 'GET', headers: AUTH, url: '/v1/batches/bq-001/report.html' });
      expect(html.headers['content-type']).toContain('text/html');
      expect(html.body).toContain('<svg');
      // Each trial links to its events and transcript on this API, and the events link answers.
      expect(html.body).toContain('<a class="link-events" href="/v1/operations/bq-001.good.t1/events">events</a>');
      expect(html.body).toContain('<a class="link-transcript" href="/#/op/bq-001.good.t1">transcript</a>');
      const events = await app.inject({ method: 'GET', headers: AUTH, url: '/v1/operations/bq-001.good.t1/events' });
      expect(events.statusCode).toBe(200);
      expect(events.body).toContain('runtime.finished');
      expect((await app.inject({ method: 'GET', url: '/dashboard/app.js' })).body).toContain('#\\/op\\/');
      expect((await app.inject({ method: 'GET', headers: AUTH, url: '/v1/batches/nope' })).statusCode).toBe(404);
      const k1 = await app.inject({ method: 'GET', headers: AUTH, url: '/v1/batches/bq-001?k=1' });
      expect(k1.json().report).toMatchObject({ k: 1 });
      expect(k1.json().report.runtimes[0]).toMatchObject({ k: 1, pass_at_k: 1 });
      const tooBig = await app.inject({ method: 'GET', headers: AUTH, url: '/v1/batches/bq-001?k=9' });
      expect(tooBig.statusCode).toBe(400);
      expect(tooBig.body).toContain('--k');
    } finally {
      await app.close();
      await client.close();
    }
  }, 180_000);
});
