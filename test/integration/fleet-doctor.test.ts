/**
 * `uh doctor --redis` as a fleet report (issue 15), and `--json` output on ONE line: a runtime
 * with a queued mission and no live worker makes doctor exit non-zero naming it; once a worker
 * serves it and the mission settles, doctor is green again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { until } from '../support/sse-client.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { metricsUrlOf } from '../support/worker-log.js';

let redis: TestRedis;
let worker: WorkerProcess | undefined;
const dirs: string[] = [];

beforeAll(async () => {
  redis = await startTestRedis('fleet-doctor');
  dirs.push(makeRepo({ 'README.md': '# doctor\n' }), tempDir('uh-state-'), tempDir('uh-cache-'));
});
afterAll(async () => {
  await worker?.stop('SIGTERM');
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

describe('uh doctor --redis (fleet)', () => {
  it('exits non-zero while a runtime has queued jobs and no live worker, then reports depth and workers; worker metrics port and NDJSON logs', async () => {
    const [repo, state, cache] = dirs as [string, string, string];
    const env = { REDIS_URL: redis.url, UH_REDIS_PREFIX: redis.prefix('fleet'), UH_CACHE_DIR: cache };
    const { path, operationId } = writeMission(repo, ['edit', 'doctor.txt', 'x'], { runtime: 'command' });
    const submitted = await runCli(['mission', 'submit', path, '--json', '--state-dir', state], { cwd: repo, env });
    expect(submitted.code).toBe(0);
    expect(submitted.stdout.trim().split('\n')).toHaveLength(1); // --json is one line

    const stuck = await runCli(['doctor', '--json', '--redis', redis.url], { cwd: repo, env });
    expect(stuck.stdout.trim().split('\n')).toHaveLength(1);
    expect(stuck.code).not.toBe(0);
    const body = JSON.parse(stuck.stdout);
    expect(body.ok).toBe(false);
    expect(body.fleet.stalled_runtimes).toEqual(['command']);
    expect(body.fleet.runtimes).toEqual([expect.objectContaining({ runtime: 'command', queued: 1, live_workers: 0 })]);
    const text = await runCli(['doctor', '--redis', redis.url], { cwd: repo, env });
    expect(text.stdout).toMatch(/✖ fleet command\s+1 queued, 0 active, 0 delayed, 0 live worker\(s\)/);
    expect(text.stdout).toContain('hint: no live worker serves runtime command');

    worker = await startWorker(['--runtime', 'command', '--state-dir', state, '--metrics-port', '0'], {
      cwd: repo,
      env: { ...env, UH_LOG_LEVEL: 'info' },
    });
    await until(
      async () =>
        JSON.parse(
          (await runCli(['mission', 'status', operationId, '--json', '--state-dir', state], { cwd: repo, env })).stdout,
        ).operation?.state === 'finished',
      'the mission to settle',
    );
    const green = await runCli(['doctor', '--json', '--redis', redis.url], { cwd: repo, env });
    const fleet = JSON.parse(green.stdout).fleet;
    expect(fleet.stalled_runtimes).toEqual([]);
    expect(fleet.runtimes).toEqual([expect.objectContaining({ runtime: 'command', queued: 0, live_workers: 1 })]);
    expect(fleet.unknown_operations).toBe(0);
    expect(typeof fleet.outbox_lag).toBe('number');
    expect(JSON.parse(green.stdout).findings.find((f: { what: string }) => f.what === 'fleet command').ok).toBe(true);

    // A worker-only host serves the same metrics.
    const metricsUrl = metricsUrlOf(worker.output());
    const scraped = await (await fetch(metricsUrl)).text();
    expect(scraped).toMatch(/^uh_workers_live\{role="runtime",runtime="command"\} 1$/m);
    expect(scraped).toMatch(/^uh_operations_settled_total\{[^}]*runtime="command"[^}]*\} 1$/m);
    expect((await fetch(metricsUrl.replace('/metrics', '/other'))).status).toBe(404);

    // Workers log NDJSON at info: claim, runtime start, phase end, settle, each with operation_id, runtime and worker.
    const lines = worker
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const mine = lines.filter((l) => l.operation_id === operationId);
    for (const msg of ['claim', 'runtime start', 'phase end', 'settle']) {
      const line = mine.find((l) => l.msg === msg);
      expect(line, msg).toMatchObject({ operation_id: operationId, runtime: 'command', worker: expect.any(String) });
    }
    expect(mine.find((l) => l.msg === 'settle')).toMatchObject({ outcome: 'finished', status: 'completed' });
  }, 120_000);
});
