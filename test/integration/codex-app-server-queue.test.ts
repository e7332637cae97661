/**
 * Queue mode with the REAL codex app server: a worker killed with -9 right after turn/start
 * leaves the operation unknown (never re-run); `uh mission recover` asks the runtime, which reads
 * the thread with a fresh app server and settles the operation from the exact turn. One model
 * request in all: no second turn. Real Redis, real `uh worker start` processes.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from '../support/cli.js';
import { makeCodexHome } from '../support/codex-home.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { startResponsesServer, type ResponsesServer } from '../support/responses-server.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { storedArtifact } from '../support/stored-artifacts.js';

const API_KEY = 'sk-uh-appserver-queue-6b1f0e22';
let redis: TestRedis;
let server: ResponsesServer;
const homes: string[] = [];
let repo: string;
let cacheDir: string;
let stateDir: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  redis = await startTestRedis('appserver');
  server = await startResponsesServer({ apiKey: API_KEY });
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-qcache-');
  stateDir = tempDir('uh-qstate-');
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await server?.close();
  await redis?.cleanup();
  [...homes, repo, cacheDir, stateDir].forEach((d) => d && removeDir(d));
});

// Which of the two finds the dead owner first depends on the heartbeat: the owner watch (its key
// expires after 3 heartbeats) or BullMQ's stalled checker (lock 2 s, checked every second), whose
// re-delivered job the next claim marks unknown. Either way the operation must be settled.
const env = (prefix: string, heartbeatMs = 500) => ({
  REDIS_URL: redis.url,
  UH_REDIS_PREFIX: prefix,
  UH_CACHE_DIR: cacheDir,
  UH_QUEUE_LOCK_MS: '2000',
  UH_QUEUE_STALLED_INTERVAL_MS: '1000',
  UH_HEARTBEAT_MS: String(heartbeatMs),
});
const uh = (prefix: string, args: string[]): Promise<CliResult> => runCli(args, { cwd: repo, env: env(prefix) });
async function worker(prefix: string, heartbeatMs?: number): Promise<WorkerProcess> {
  const w = await startWorker(['--state-dir', stateDir, '--runtime', 'codex-app-server', '--allow-unready'], {
    cwd: repo,
    env: { ...env(prefix, heartbeatMs), UH_LOG_LEVEL: 'info' },
  });
  workers.push(w);
  return w;
}
async function until(what: string, check: () => Promise<boolean>, boundMs = 30_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('codex-app-server in queue mode', () => {
  it.each([
    ['the owner watch', 500],
    ["the stalled checker's re-delivery", 60_000],
  ])(
    'a worker killed -9 after turn/start, found by %s: unknown, then the live worker settles it from the exact turn, no operator command; one model request',
    { timeout: 150_000 },
    async (_who, heartbeatMs) => {
      const prefix = redis.prefix(`kill${heartbeatMs}`);
      // A codex home of its own: the other case's thread must not be this one's baseline.
      const codexHome = makeCodexHome(server.url);
      homes.push(codexHome);
      await server.script([{ kind: 'hang' }]);
      const { path, operationId } = writeMission(repo, [], {
        runtime: 'codex-app-server',
        runtime_config_overrides: {
          'codex-app-server': {
            binary: realRuntimeBinary('codex'),
            codex_home: codexHome,
            env: { UH_MOCK_API_KEY: API_KEY },
          },
        },
      });
      const key = `{${prefix}}:op:${operationId}`;
      const journal = async () => JSON.parse((await redis.redis.hget(key, 'journal')) || '{}').codex_app_server ?? {};

      const w1 = await worker(prefix, heartbeatMs);
      expect((await uh(prefix, ['mission', 'submit', path, '--state-dir', stateDir])).code).toBe(0);
      await until(
        'the turn to reach the model',
        async () => (await journal()).turn_id !== undefined && (await server.requests()).length === 1,
      );
      // The runtime journal lives in the record only while the operation runs (a settled record is
      // compact: compact-record.ts drops it), so the binding the recovery must use is read here.
      const left = await journal();
      await w1.stop('SIGKILL');

      // The second worker's owner watch finds the dead owner (heartbeat expired), marks the
      // operation unknown, and settles it from codex's own records as `uh mission recover` would.
      const w2 = await worker(prefix, heartbeatMs);
      // Bounded generously: under a full suite on 2 cores the recovery's fresh app server starts slowly.
      await until(
        'the operation to settle',
        async () => (await redis.redis.hget(key, 'state')) === 'finished',
        90_000,
      ).catch(async (error: Error) => {
        throw new Error(
          `${error.message}; record ${JSON.stringify(await redis.redis.hgetall(key))}; worker output:\n${w2.output()}`,
        );
      });
      expect(await redis.redis.hexists(key, 'journal')).toBe(0); // settled: the journal is gone
      expect(left).toMatchObject({
        client_message_id: `uh-op:${operationId}`,
        dispatch: 'bound',
        baseline_turn_ids: [],
      });
      const events = (await redis.redis.xrange(`${key}:events`, '-', '+')).flatMap(([, f]) =>
        f[0] === 'event' ? [JSON.parse(f[1] as string)] : [],
      );
      expect(events.map((e) => e.type)).toContain('operation.unknown');
      expect(events.find((e) => e.type === 'operation.completed')?.data).toMatchObject({
        status: 'failed',
        recovered: true,
      });
      const receipt = JSON.parse((await storedArtifact(redis.redis, env(prefix), operationId, 'receipt')) as string);
      // Which way codex recorded the turn is a race it runs itself: the killed worker took uh's egress
      // proxy with it, so the app server either saw its model stream cut first and wrote the turn
      // failed ("stream disconnected before completion"), or was ended first and the turn reads
      // interrupted. Under load on 2 cores both happen (3 of 8 runs the first); either is the truth.
      expect(receipt.outcome.status).toBe('failed');
      if (receipt.outcome.raw === 'readback:failed:other')
        expect(receipt.outcome.message).toMatch(/^stream disconnected before completion/);
      else expect(receipt.outcome.raw).toBe('readback:interrupted');
      expect(receipt.runtime).toMatchObject({ thread_id: left.thread_id, turn_id: left.turn_id });
      // Ended by the live worker through the one finishing module: signed with the fleet's key.
      const file = join(tempDir('uh-verify-'), 'receipt.json');
      writeFileSync(file, (await storedArtifact(redis.redis, env(prefix), operationId, 'receipt')) as string);
      const verified = await uh(prefix, ['receipt', 'verify', file, '--json']);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
      expect(JSON.parse(verified.stdout)).toMatchObject({ state: 'valid' });
      expect(await server.requests()).toHaveLength(1);
    },
  );
});
