/**
 * Fleet operation (issue 12): dead workers noticed in seconds by the live ones (no operator
 * command, BullMQ's lock left at its 120 s default), safety rails at `uh worker start` and
 * `uh mission submit`. Real Redis, real worker processes, real git, the fake agent.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

// This file's fake agents coordinate with the test through files outside their sandbox (pid, gate and
// counter files), which bubblewrap isolation hides by design; isolation itself is tested in test/security/.
process.env.UH_ISOLATION = 'off';

let redis: TestRedis;
let repo: string;
let cacheDir: string;
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
const orphans: number[] = [];

beforeAll(async () => {
  redis = await startTestRedis('fleet');
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-fcache-');
  dirs.push(repo, cacheDir);
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

/** Default lock (120 s) and stalled timings: only the heartbeat watch can notice in seconds. */
const env = (prefix: string, extra: Record<string, string> = {}) => ({
  REDIS_URL: redis.url,
  UH_REDIS_PREFIX: prefix,
  UH_CACHE_DIR: cacheDir,
  UH_HEARTBEAT_MS: '2000',
  ...extra,
});
const state = () => {
  const d = tempDir('uh-fstate-');
  dirs.push(d);
  return d;
};
const uh = (prefix: string, args: string[], extra: Record<string, string> = {}): Promise<CliResult> =>
  runCli(args, { cwd: repo, env: env(prefix, extra) });
async function worker(prefix: string, args: string[]): Promise<WorkerProcess> {
  const w = await startWorker(['--state-dir', state(), ...args], {
    cwd: repo,
    env: { ...env(prefix), UH_LOG_LEVEL: 'warn' },
  });
  workers.push(w);
  return w;
}
const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('a worker killed with -9 mid-mission', () => {
  it('is noticed by a live worker: unknown within 30 s with an operation.unknown event, no operator command, the runtime ran once', async () => {
    const prefix = redis.prefix('dead');
    const countFile = join(tempDir('uh-count-'), 'count');
    const { path, operationId } = writeMission(repo, ['count', countFile, 'slow', '60000']);
    // The watcher serves another runtime: any live worker watches every queue.
    await worker(prefix, ['--runtime', 'hermes', '--allow-unready']);
    const victim = await worker(prefix, ['--runtime', 'command']);
    expect((await uh(prefix, ['mission', 'submit', path, '--state-dir', state()])).code).toBe(0);
    expect(await waitFor(() => lines(countFile).length === 1, 20_000)).toBe(true);
    orphans.push(Number(lines(countFile)[0]));
    await victim.stop('SIGKILL');
    const killedAt = Date.now();

    let status: CliResult | null = null;
    const deadline = killedAt + 30_000;
    while (Date.now() < deadline) {
      status = await uh(prefix, ['mission', 'status', operationId, '--json', '--state-dir', state()]);
      if (status.stdout && JSON.parse(status.stdout).operation?.state === 'unknown') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const noticedMs = Date.now() - killedAt;
    expect(status?.code).toBe(5);
    expect(JSON.parse(status?.stdout ?? '{}').operation.state).toBe('unknown');
    expect(noticedMs).toBeLessThan(30_000);
    process.stderr.write(`fleet: kill -9 → unknown in ${noticedMs} ms (heartbeat 2000 ms, lock 120000 ms)\n`);
    const events = (await redis.redis.xrange(`{${prefix}}:op:${operationId}:events`, '-', '+')).flatMap(([, f]) =>
      f[0] === 'event' ? [JSON.parse(f[1] as string)] : [],
    );
    expect(events.find((e) => e.type === 'operation.unknown')?.data.reason).toContain('heartbeat expired');
    // A second worker for the runtime never runs it again.
    await worker(prefix, ['--runtime', 'command']);
    const again = await uh(prefix, [
      'mission',
      'submit',
      path,
      '--wait',
      '--json',
      '--timeout',
      '5',
      '--state-dir',
      state(),
    ]);
    expect(again.code).toBe(5);
    expect(lines(countFile)).toHaveLength(1);
  });
});

describe('safety rails', () => {
  it('a worker for a runtime whose binary is missing exits 3 at start with the check hint', async () => {
    const prefix = redis.prefix('unready');
    const r = await uh(prefix, ['worker', 'start', '--runtime', 'hermes', '--state-dir', state()], {
      PATH: '/usr/bin:/bin',
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('runtime hermes is not ready');
    expect(r.stderr).toMatch(/hint: .*install Hermes/);
  });

  it('submit warns when no live worker serves the runtime; --require-worker exits 3 and enqueues nothing', async () => {
    const prefix = redis.prefix('noworker');
    const { path, operationId } = writeMission(repo, []);
    const refused = await uh(prefix, ['mission', 'submit', path, '--require-worker', '--state-dir', state()]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('no live worker serves runtime command');
    expect(await redis.redis.exists(`{${prefix}}:op:${operationId}`)).toBe(0);
    const warned = await uh(prefix, ['mission', 'submit', path, '--state-dir', state()]);
    expect(warned.code).toBe(0);
    expect(warned.stderr).toContain('warning: no live worker serves runtime command');
    await worker(prefix, ['--runtime', 'command']);
    const served = await uh(prefix, [
      'mission',
      'submit',
      writeMission(repo, []).path,
      '--require-worker',
      '--wait',
      '--state-dir',
      state(),
    ]);
    expect(served.code).toBe(0);
    expect(served.stderr).not.toContain('no live worker');
  });
});
