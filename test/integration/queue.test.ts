/**
 * Queue mode end to end: real Redis, real `uh worker start` processes, real `uh mission …`
 * producer processes, real git and the fake agent. Each scenario has its own key prefix (its own
 * "fleet"), so scenarios never see each other's jobs; every key is removed afterwards.
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { openArtifactStore } from '../../src/shared/artifacts/open-artifact-store.js';
import { OperationStore } from '../../src/shared/queue/operation-store.js';
import { runCli, type CliResult } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { processGone, waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

const BURST = fileURLToPath(new URL('../fixtures/bin/submit-burst.mjs', import.meta.url));
const FAKE_HERMES = fileURLToPath(new URL('../fixtures/bin/fake-hermes.mjs', import.meta.url));

let redis: TestRedis;
let repo: string;
let cacheDir: string;
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
const orphans: number[] = [];

beforeAll(async () => {
  redis = await startTestRedis('queue');
  repo = makeRepo({ 'README.md': '# demo\n', 'src/app.txt': 'v1\n' });
  cacheDir = tempDir('uh-qcache-');
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

/** The environment of every uh process of one scenario ("fleet"): fast lock/stall timings. */
function fleetEnv(prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL: redis.url,
    UH_REDIS_PREFIX: prefix,
    UH_CACHE_DIR: cacheDir,
    UH_QUEUE_LOCK_MS: '2000',
    UH_QUEUE_STALLED_INTERVAL_MS: '1000',
    UH_HEARTBEAT_MS: '500',
    // The fake agent reports through files outside its sandbox (counts, pids): unisolated here;
    // the isolated queue path is test/security/isolation.test.ts.
    UH_ISOLATION: 'off',
    ...extra,
  };
}

function state(): string {
  const dir = tempDir('uh-qstate-');
  dirs.push(dir);
  return dir;
}

function uh(
  prefix: string,
  args: string[],
  extra: Record<string, string> = {},
  onSpawn?: (pid: number) => void,
): Promise<CliResult> {
  return runCli(args, { cwd: repo, env: fleetEnv(prefix, extra), ...(onSpawn ? { onSpawn } : {}) });
}

/** An operation's artifacts as the fleet stored them: the default artifact store, `<UH_CACHE_DIR>/artifacts`. */
async function storedArtifacts(prefix: string, operationId: string): Promise<Record<string, string>> {
  const store = new OperationStore(
    redis.redis,
    prefix,
    openArtifactStore(loadConfig(fleetEnv(prefix)).queue.artifactStore),
  );
  return store.artifacts(operationId);
}

/** `uh receipt verify` of the receipt an operation ended with, as stored in the fleet's artifact store. */
async function verifyCollected(prefix: string, operationId: string): Promise<unknown> {
  const file = join(tempDir('uh-verify-'), 'receipt.json');
  writeFileSync(file, (await storedArtifacts(prefix, operationId)).receipt as string);
  const verified = await uh(prefix, ['receipt', 'verify', file, '--json']);
  expect(verified.code).toBe(0);
  return JSON.parse(verified.stdout);
}

async function worker(prefix: string, args: string[], extra: Record<string, string> = {}): Promise<WorkerProcess> {
  const w = await startWorker(['--state-dir', state(), ...args], {
    cwd: repo,
    env: { ...fleetEnv(prefix, extra), UH_LOG_LEVEL: 'warn' },
  });
  workers.push(w);
  return w;
}

async function record(prefix: string, id: string): Promise<Record<string, string>> {
  return redis.redis.hgetall(`{${prefix}}:op:${id}`);
}

async function waitForRecord(
  prefix: string,
  id: string,
  ok: (r: Record<string, string>) => boolean,
  timeoutMs = 30_000,
): Promise<Record<string, string>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await record(prefix, id);
    if (ok(r)) return r;
    if (Date.now() > deadline) throw new Error(`record ${id} never matched; last: ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const json = (r: CliResult) => JSON.parse(r.stdout);

function burst(
  prefix: string,
  n: number,
  missionPath: string,
  stateDir: string,
): Promise<Array<{ kind?: string; error?: string }>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BURST, String(n), missionPath, stateDir], {
      cwd: repo,
      env: { ...process.env, ...fleetEnv(prefix) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) =>
      code === 0
        ? resolve(
            out
              .trim()
              .split('\n')
              .map((l) => JSON.parse(l)),
          )
        : reject(new Error(`submit-burst exited ${code}: ${err}`)),
    );
  });
}

describe('idempotent producers', () => {
  it('50 concurrent identical submissions from 5 processes create one operation and run the runtime exactly once; attach works after the job is gone', async () => {
    const prefix = redis.prefix('burst');
    const countFile = join(tempDir('uh-count-'), 'count');
    const { path, operationId } = writeMission(repo, ['count', countFile]);
    const producerState = state();
    // No worker yet: every submission races on the record in Redis.
    const results = (await Promise.all(Array.from({ length: 5 }, () => burst(prefix, 10, path, producerState)))).flat();
    expect(results).toHaveLength(50);
    expect(results.filter((r) => r.error)).toEqual([]);
    expect(results.filter((r) => r.kind === 'created')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'attached')).toHaveLength(49);
    expect(await redis.redis.llen(`{${prefix}}:bull:runtime.command:wait`)).toBe(1);

    const w = await worker(prefix, ['--runtime', 'command', '--concurrency', '4']);
    const waited = await uh(prefix, ['mission', 'submit', path, '--wait', '--json', '--state-dir', producerState]);
    expect(waited.code).toBe(0);
    expect(json(waited)).toMatchObject({ operation_id: operationId, status: 'completed', attached: true });
    expect(lines(countFile)).toHaveLength(1);

    // Long after: BullMQ's job is removed; our record still attaches, nothing runs again.
    await redis.redis.del(`{${prefix}}:bull:runtime.command:op.${operationId}`);
    await redis.redis.zrem(`{${prefix}}:bull:runtime.command:completed`, `op.${operationId}`);
    const again = await uh(prefix, ['mission', 'submit', path, '--wait', '--json', '--state-dir', producerState]);
    expect(again.code).toBe(0);
    expect(json(again).attached).toBe(true);
    expect(lines(countFile)).toHaveLength(1);

    // Same operation_id, another contract: exit 2, nothing enqueued, the record untouched.
    const before = await record(prefix, operationId);
    writeFileSync(path, readFileSync(path, 'utf8').replace('Do what the fake agent does.', 'Something else entirely.'));
    const conflict = await uh(prefix, ['mission', 'submit', path, '--json', '--state-dir', producerState]);
    expect(conflict.code).toBe(2);
    expect(conflict.stderr).toContain('already exists with another contract digest');
    expect(await redis.redis.llen(`{${prefix}}:bull:runtime.command:wait`)).toBe(0);
    expect(await record(prefix, operationId)).toEqual(before);
    expect(await w.stop()).toBe(0);
    expect(lines(countFile)).toHaveLength(1);
  });
});

describe('one fleet: worker pool, --wait exit codes, cancel, collect, watch', () => {
  const prefix = () => redis.prefix('main');
  let producerState: string;

  beforeAll(async () => {
    producerState = state();
    await worker(prefix(), ['--runtime', 'command', '--concurrency', '4'], { UH_ARTIFACT_CAP_BYTES: '4096' });
  });

  it('--wait exits with the code of each status and verdict', async () => {
    const check = (argv: string[]) => [{ name: 'c', argv, timeout_seconds: 30 }];
    const cases: Array<[string, string[], Record<string, unknown>, number, Record<string, unknown>]> = [
      [
        'verified',
        ['edit', 'src/new.txt', 'x'],
        { scope: { allowed_change_globs: ['src/**'] }, verification: check(['test', '-f', 'src/new.txt']) },
        0,
        { status: 'completed', verdict: 'verified' },
      ],
      ['unverified', ['noop'], {}, 0, { status: 'completed', verdict: 'unverified' }],
      [
        'verification_failed',
        ['noop'],
        { verification: check(['false']) },
        1,
        { status: 'completed', verdict: 'verification_failed' },
      ],
      [
        'scope_violation',
        ['edit', 'README.md', 'x'],
        { scope: { allowed_change_globs: ['src/**'] } },
        1,
        { status: 'completed', verdict: 'scope_violation' },
      ],
      ['failed', ['exit', '3'], {}, 1, { status: 'failed' }],
      [
        'blocked',
        [],
        { runtime_config_overrides: { command: { argv: ['uh-no-such-agent'] } } },
        3,
        { status: 'blocked' },
      ],
    ];
    const runs = await Promise.all(
      cases.map(async ([, agent, patch]) => {
        const { path } = writeMission(repo, agent, patch);
        return uh(prefix(), ['mission', 'submit', path, '--wait', '--json', '--state-dir', producerState]);
      }),
    );
    for (const [i, [name, , , code, fields]] of cases.entries()) {
      expect({ name, code: runs[i]!.code }).toEqual({ name, code });
      expect(json(runs[i]!)).toMatchObject({ ...fields, exit_code: code });
    }
    // A wait that times out: exit 5, the operation keeps running (then cancel it and see 4).
    const { path, operationId } = writeMission(repo, ['hang']);
    const timedOut = await uh(prefix(), [
      'mission',
      'submit',
      path,
      '--wait',
      '--timeout',
      '1',
      '--state-dir',
      producerState,
    ]);
    expect(timedOut.code).toBe(5);
    expect(timedOut.stderr).toContain('after 1 s');
    const cancelled = await uh(prefix(), ['mission', 'cancel', operationId, '--wait', '--json']);
    expect(cancelled.code).toBe(4);
    expect((await uh(prefix(), ['mission', 'status', operationId, '--state-dir', state()])).code).toBe(4);
  });

  it('cancels a running operation from another process: the waiting producer exits 4, a live watcher too, the runtime group is killed', async () => {
    const pidFile = join(tempDir('uh-pid-'), 'grandchild.pid');
    const { path, operationId } = writeMission(repo, ['hang', pidFile]);
    const waiting = uh(prefix(), ['mission', 'submit', path, '--wait', '--json', '--state-dir', producerState]);
    await waitForRecord(prefix(), operationId, (r) => r.runtime_started === '1');
    const watching = uh(prefix(), ['mission', 'watch', operationId, '--json']);
    expect(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '', 10_000)).toBe(true);
    const cancel = await uh(prefix(), ['mission', 'cancel', operationId, '--json']);
    expect(cancel.code).toBe(0);
    expect(json(cancel).outcome).toBe('cancel sent to the worker running it');
    const [waited, watched] = await Promise.all([waiting, watching]);
    expect(waited.code).toBe(4);
    expect(json(waited)).toMatchObject({ status: 'cancelled', outcome: { raw: 'cancel' } });
    expect(watched.code).toBe(4);
    const types = watched.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).type);
    expect(types).toContain('runtime.started');
    expect(types).toContain('operation.completed');
    expect(await waitFor(() => processGone(Number(readFileSync(pidFile, 'utf8'))), 5000)).toBe(true);
  });

  it('collects receipt, capped diff, final message and events from another state dir; writes GitHub outputs', async () => {
    const big = 'y'.repeat(300) + '\\n';
    const { path, operationId } = writeMission(repo, ['edit', 'src/big.txt', big.repeat(40)]);
    const ghOutput = join(tempDir('uh-gh-'), 'output');
    writeFileSync(ghOutput, '');
    const waited = await uh(prefix(), ['mission', 'submit', path, '--wait', '--state-dir', producerState], {
      GITHUB_OUTPUT: ghOutput,
    });
    expect(waited.code).toBe(0);
    const gh = readFileSync(ghOutput, 'utf8');
    expect(gh).toContain('status=completed\n');
    expect(gh).toContain('verdict=unverified\n');
    expect(gh).toContain(`operation_id=${operationId}\n`);
    const receiptPath = /receipt_path=(.*)\n/.exec(gh)?.[1] as string;
    expect(JSON.parse(readFileSync(receiptPath, 'utf8')).operation_id).toBe(operationId);
    expect(existsSync(/diff_path=(.*)\n/.exec(gh)?.[1] as string)).toBe(true);

    const out = tempDir('uh-collect-');
    const elsewhere = state();
    const collected = await uh(prefix(), [
      'mission',
      'collect',
      operationId,
      '--out',
      out,
      '--state-dir',
      elsewhere,
      '--json',
    ]);
    expect(collected.code).toBe(0);
    const receipt = JSON.parse(readFileSync(join(out, 'receipt.json'), 'utf8'));
    expect(receipt).toMatchObject({
      operation_id: operationId,
      status: 'completed',
      changed_files: [{ path: 'src/big.txt', status: 'added' }],
    });
    const diff = readFileSync(join(out, 'diff.patch'), 'utf8');
    expect(diff).toContain('+yyyy');
    expect(diff).toContain('# uh: truncated: kept');
    expect(Buffer.byteLength(diff)).toBeLessThan(4096 + 300);
    expect(readFileSync(join(out, 'runtime-final.txt'), 'utf8')).toBe('Edited src/big.txt.');
    const events = readFileSync(join(out, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).type);
    expect(events[0]).toBe('operation.queued');
    expect(events).toContain('operation.completed');
    const status = await uh(prefix(), ['mission', 'status', operationId, '--state-dir', elsewhere, '--json']);
    expect(status.code).toBe(0);
    expect(json(status).operation).toMatchObject({ state: 'finished', status: 'completed' });
  });

  it('writes a multi-line final message to $GITHUB_OUTPUT with a heredoc delimiter', async () => {
    const { path } = writeMission(repo, ['final', 'line one\\nline two']);
    const ghOutput = join(tempDir('uh-gh-'), 'output');
    writeFileSync(ghOutput, '');
    const waited = await uh(prefix(), ['mission', 'submit', path, '--wait', '--state-dir', producerState], {
      GITHUB_OUTPUT: ghOutput,
    });
    expect(waited.code).toBe(0);
    const m = /final_message<<(uh_[0-9a-f]+)\n([\s\S]*?)\n\1\n/.exec(readFileSync(ghOutput, 'utf8'));
    expect(m?.[2]).toBe('line one\nline two');
  });

  it('keeps a runtime secret out of every output, event, artifact and completion', async () => {
    const secret = 'sk-live-queue-3e9b1d7a5c';
    const { FAKE_AGENT } = await import('../support/cli.js');
    const { path, operationId } = writeMission(repo, [], {
      runtime_config_overrides: {
        command: { argv: [process.execPath, FAKE_AGENT, 'echo-env', 'MY_API_KEY'], env: { MY_API_KEY: secret } },
      },
    });
    const outputs = [await uh(prefix(), ['mission', 'submit', path, '--wait', '--json', '--state-dir', producerState])];
    expect(outputs[0]!.code).toBe(0);
    outputs.push(await uh(prefix(), ['mission', 'status', operationId, '--json']));
    outputs.push(await uh(prefix(), ['mission', 'list', '--json']));
    outputs.push(await uh(prefix(), ['mission', 'watch', operationId, '--json']));
    outputs.push(await uh(prefix(), ['mission', 'recover', operationId, '--json']));
    for (const o of outputs) expect(o.stdout + o.stderr).not.toContain(secret);
    const artifacts = await storedArtifacts(prefix(), operationId);
    expect(Object.keys(artifacts)).toContain('receipt');
    expect(JSON.stringify(artifacts)).not.toContain(secret);
    const stored = await redis.redis.xrange(`{${prefix()}}:op:${operationId}:events`, '-', '+');
    expect(JSON.stringify(stored)).not.toContain(secret);
    expect(JSON.stringify(await redis.redis.xrange(`${prefix()}:outbox`, '-', '+'))).not.toContain(secret);
  });

  it('submits several mission files in one command: each runs once; a conflict among them is exit 2 and the others still go', async () => {
    const countFile = join(tempDir('uh-count-'), 'count');
    const missions = [1, 2, 3].map(() => writeMission(repo, ['count', countFile]));
    const many = await uh(prefix(), [
      'mission',
      'submit',
      ...missions.map((m) => m.path),
      '--json',
      '--state-dir',
      producerState,
    ]);
    expect(many.code).toBe(0);
    expect(json(many)).toEqual(
      missions.map((m) =>
        expect.objectContaining({ operation_id: m.operationId, attached: false, queue: 'runtime.command' }),
      ),
    );
    for (const m of missions) {
      const waited = await uh(prefix(), [
        'mission',
        'submit',
        m.path,
        '--wait',
        '--json',
        '--state-dir',
        producerState,
      ]);
      expect(json(waited)).toMatchObject({ operation_id: m.operationId, status: 'completed', attached: true });
    }
    expect(lines(countFile)).toHaveLength(3);

    const first = missions[0] as { path: string; operationId: string };
    writeFileSync(
      first.path,
      readFileSync(first.path, 'utf8').replace('Do what the fake agent does.', 'Something else entirely.'),
    );
    const fresh = writeMission(repo, ['count', countFile]);
    const mixed = await uh(prefix(), ['mission', 'submit', first.path, fresh.path, '--state-dir', producerState]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('already exists with another contract digest');
    expect(mixed.stdout).toContain(`queued ${fresh.operationId}`);
    await waitForRecord(prefix(), fresh.operationId, (r) => r.state === 'finished');
    expect(lines(countFile)).toHaveLength(4);
  });

  it('lists operations from Redis', async () => {
    const listed = await uh(prefix(), ['mission', 'list', '--json', '--state', 'finished']);
    expect(listed.code).toBe(0);
    expect(json(listed).length).toBeGreaterThanOrEqual(8);
  });
});

describe('a worker killed with -9 mid-run', () => {
  it('leaves the operation unknown, never runs the runtime again, and recover settles it', async () => {
    const prefix = redis.prefix('kill');
    const countFile = join(tempDir('uh-count-'), 'count');
    const { path, operationId } = writeMission(repo, ['count', countFile, 'slow', '60000']);
    const w1 = await worker(prefix, ['--runtime', 'command']);
    expect((await uh(prefix, ['mission', 'submit', path, '--state-dir', state()])).code).toBe(0);
    expect(await waitFor(() => lines(countFile).length === 1, 20_000)).toBe(true);
    orphans.push(Number(lines(countFile)[0])); // the agent outlives its worker: removed after the file
    await w1.stop('SIGKILL');

    // A second worker notices: its owner watch (heartbeat 0.5 s) or the stalled job (lock 2 s) marks it unknown.
    await worker(prefix, ['--runtime', 'command']);
    const watched = await uh(prefix, ['mission', 'watch', operationId, '--json', '--timeout', '30']);
    expect(watched.code).toBe(5);
    expect(watched.stdout).toContain('"operation.unknown"');
    const r = await record(prefix, operationId);
    expect(r).toMatchObject({ state: 'unknown', runtime_started: '1' });
    // The owner watch (heartbeat expired) or BullMQ's stalled re-delivery, whichever comes first.
    expect(r.unknown_reason).toMatch(/heartbeat expired|re-delivered after its runtime had started/);
    expect((await storedArtifacts(prefix, operationId)).receipt).toBeUndefined();
    expect((await uh(prefix, ['mission', 'status', operationId, '--state-dir', state()])).code).toBe(5);
    // Resubmitting attaches to the unknown operation; it does not run again.
    const resubmit = await uh(prefix, ['mission', 'submit', path, '--wait', '--json', '--state-dir', state()]);
    expect(resubmit.code).toBe(5);
    expect(json(resubmit).state).toBe('unknown');

    const recovered = await uh(prefix, ['mission', 'recover', operationId, '--json']);
    expect(recovered.code).toBe(1);
    expect(json(recovered).operation).toMatchObject({ state: 'finished', status: 'failed' });
    const receipt = JSON.parse((await storedArtifacts(prefix, operationId)).receipt as string);
    expect(receipt.outcome).toMatchObject({ status: 'failed', raw: 'unknown' });
    expect(receipt.outcome.hint).toContain('new operation_id');
    expect(lines(countFile)).toHaveLength(1);
    // Settled by recover through the one finishing module: signed like every receipt.
    expect(await verifyCollected(prefix, operationId)).toMatchObject({ state: 'valid' });
  });
});

describe('rate limits', () => {
  it('a 429 with "try again in 7s" runs again as a new attempt, only after the first settled, after the asked delay', async () => {
    const prefix = redis.prefix('retry');
    await worker(prefix, ['--runtime', 'hermes', '--allow-unready'], { UH_RETRY_MAX_ATTEMPTS: '2' }); // the fake hermes comes with the mission
    const { path, operationId } = writeMission(repo, [], {
      runtime: 'hermes',
      runtime_config_overrides: { hermes: { binary: FAKE_HERMES, env: { UH_FAKE_SCENARIO: 'rate-limit' } } },
    });
    const waited = await uh(prefix, ['mission', 'submit', path, '--wait', '--json', '--state-dir', state()]);
    expect(waited.code).toBe(3);
    const second = json(waited);
    expect(second).toMatchObject({
      attempt: 2,
      status: 'blocked',
      outcome: { raw: 'provider:rate_limit', retry_after_ms: 7000 },
    });
    const attempts = (await redis.redis.lrange(`{${prefix}}:op:${operationId}:attempts`, 0, -1)).map((r) =>
      JSON.parse(r),
    );
    expect(attempts.map((r) => [r.attempt, r.status])).toEqual([[1, 'blocked']]);
    // Never two at once: attempt 2 started after attempt 1 finished, at least the asked delay later.
    expect(Date.parse(second.started_at) - Date.parse(attempts[0].finished_at)).toBeGreaterThanOrEqual(6900);
    expect((await record(prefix, operationId)).job_id).toBe(`op.${operationId}@2`);
    const events = (await redis.redis.xrange(`{${prefix}}:op:${operationId}:events`, '-', '+')).flatMap(([, f]) =>
      f[0] === 'event' ? [JSON.parse(f[1] as string)] : [],
    );
    expect(events.find((e) => e.type === 'operation.queued' && e.data.attempt === 2)?.data).toMatchObject({
      delay_ms: 7000,
      reason: 'rate_limit',
    });
    // The retry is decided before any final event: one operation.completed, the last attempt's, after the requeue.
    const completed = events.flatMap((e, i) => (e.type === 'operation.completed' ? [i] : []));
    expect(completed).toHaveLength(1);
    expect(completed[0]).toBeGreaterThan(
      events.findIndex((e) => e.type === 'operation.queued' && e.data.attempt === 2),
    );
    expect(events[completed[0] as number]?.data).toMatchObject({ status: 'blocked', exit_code: 3 });
    // The first attempt's receipt, kept in the attempt list, is signed like every receipt.
    expect(attempts[0].signature?.key_id).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('recover of a queued operation whose job is gone', () => {
  it('enqueues it again (its runtime never started) and it runs once', async () => {
    const prefix = redis.prefix('requeue');
    const countFile = join(tempDir('uh-count-'), 'count');
    const { path, operationId } = writeMission(repo, ['count', countFile]);
    expect((await uh(prefix, ['mission', 'submit', path, '--state-dir', state()])).code).toBe(0);
    // The job vanishes (Redis flushed by an operator, a crash before the add): the record stays.
    await redis.redis.del(
      `{${prefix}}:bull:runtime.command:wait`,
      `{${prefix}}:bull:runtime.command:op.${operationId}`,
    );
    const recovered = await uh(prefix, ['mission', 'recover', operationId, '--json']);
    expect(recovered.code).toBe(5); // still queued
    expect(json(recovered).steps.join(' ')).toContain('enqueued again');
    const w = await worker(prefix, ['--runtime', 'command']);
    const watched = await uh(prefix, ['mission', 'watch', operationId, '--timeout', '30']);
    expect(watched.code).toBe(0);
    expect(lines(countFile)).toHaveLength(1);
    expect(await w.stop()).toBe(0);
  });
});

describe('completion outbox', () => {
  it('a results consumer started late receives every completion, webhook signed and retried; a waiting job cancels at once', async () => {
    const prefix = redis.prefix('outbox');
    const producerState = state();
    // Cancel while waiting (no worker yet): removed from the queue, a cancelled receipt at once.
    const countFile = join(tempDir('uh-count-'), 'count');
    const waitingOp = writeMission(repo, ['count', countFile]);
    expect((await uh(prefix, ['mission', 'submit', waitingOp.path, '--state-dir', producerState])).code).toBe(0);
    const cancel = await uh(prefix, ['mission', 'cancel', waitingOp.operationId, '--json']);
    expect(json(cancel)).toMatchObject({ outcome: 'cancelled (was waiting)', state: 'finished', status: 'cancelled' });
    expect(await redis.redis.llen(`{${prefix}}:bull:runtime.command:wait`)).toBe(0);
    expect((await uh(prefix, ['mission', 'status', waitingOp.operationId, '--state-dir', state()])).code).toBe(4);
    expect(await verifyCollected(prefix, waitingOp.operationId)).toMatchObject({ state: 'valid' }); // signed too

    const w = await worker(prefix, ['--runtime', 'command', '--concurrency', '3']);
    const ops = [writeMission(repo, ['noop']), writeMission(repo, ['exit', '1']), writeMission(repo, ['noop'])];
    const codes = await Promise.all(
      ops.map((m) =>
        uh(prefix, ['mission', 'submit', m.path, '--wait', '--state-dir', producerState]).then((r) => r.code),
      ),
    );
    expect(codes).toEqual([0, 1, 0]);
    expect(lines(countFile)).toEqual([]); // the cancelled waiting job never ran

    // Now the consumer: a webhook that fails once, then accepts.
    const secret = 'whsec-test-5f1c';
    const received: Array<{ body: any; signature: string | undefined; delivery: string | undefined }> = [];
    let calls = 0;
    const server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        calls += 1;
        if (calls === 1) return void res.writeHead(500).end();
        const expected = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
        const signature = req.headers['x-uh-signature-256'] as string | undefined;
        received.push({
          body: JSON.parse(body),
          signature: signature === expected ? 'valid' : signature,
          delivery: req.headers['x-uh-delivery'] as string,
        });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const results = await worker(prefix, ['--results', '--json'], {
        UH_WEBHOOK_URL: url,
        UH_WEBHOOK_SECRET: secret,
        UH_WEBHOOK_BACKOFF_MS: '50',
      });
      expect(await waitFor(() => received.length >= 4, 20_000)).toBe(true);
      const ids = received.map((r) => r.body.completion.operation_id).sort();
      expect(ids).toEqual([waitingOp.operationId, ...ops.map((o) => o.operationId)].sort());
      expect(received.every((r) => r.signature === 'valid')).toBe(true);
      expect(received.find((r) => r.body.completion.operation_id === ops[1]!.operationId)?.body.receipt).toMatchObject({
        status: 'failed',
        exit_code: 1,
      });
      expect(new Set(received.map((r) => r.delivery)).size).toBe(4);
      expect(calls).toBe(5); // one retried delivery
      await results.waitForOutput('"event":"completion"');
      expect(await results.stop()).toBe(0);
      expect(await redis.redis.xpending(`{${prefix}}:outbox`, 'results')).toEqual([0, null, null, null]);
      expect(results.output()).not.toContain(secret);
    } finally {
      server.close();
    }
    expect(await w.stop()).toBe(0);
  });
});

describe('graceful shutdown', () => {
  it('SIGTERM: stops taking jobs, lets a short mission finish, cancels a long one after the grace period, exits 0', async () => {
    const prefix = redis.prefix('shutdown');
    const producerState = state();
    const w = await worker(prefix, ['--runtime', 'command', '--concurrency', '2'], { UH_WORKER_GRACE_MS: '3000' });
    const longOp = writeMission(repo, ['hang']);
    const shortCount = join(tempDir('uh-count-'), 'count');
    const shortOp = writeMission(repo, ['count', shortCount, 'slow', '1000']);
    for (const m of [longOp, shortOp])
      expect((await uh(prefix, ['mission', 'submit', m.path, '--state-dir', producerState])).code).toBe(0);
    await waitForRecord(prefix, longOp.operationId, (r) => r.runtime_started === '1');
    await waitForRecord(prefix, shortOp.operationId, (r) => r.runtime_started === '1');
    expect(await waitFor(() => lines(shortCount).length === 1, 20_000)).toBe(true); // its agent runs: 1 s left
    const started = Date.now();
    w.child.kill('SIGTERM');
    await w.waitForOutput('stopping');
    const lateCount = join(tempDir('uh-count-'), 'count');
    const late = writeMission(repo, ['count', lateCount]);
    expect((await uh(prefix, ['mission', 'submit', late.path, '--state-dir', producerState])).code).toBe(0);
    expect(await w.exited).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    const long = await uh(prefix, ['mission', 'status', longOp.operationId, '--json']);
    expect(long.code).toBe(4);
    expect(json(long).receipt.outcome.message).toContain('grace period');
    expect((await uh(prefix, ['mission', 'status', shortOp.operationId])).code).toBe(0);
    expect((await record(prefix, late.operationId)).state).toBe('queued');
    expect(lines(lateCount)).toEqual([]);
  });
});

describe('no REDIS_URL', () => {
  const NOTICE = 'uh: REDIS_URL not set; using redis://127.0.0.1:6379';

  it('every queue command uses redis://127.0.0.1:6379 and says so first on stderr, never on --json stdout', async () => {
    expect(redis.url, 'this scenario needs the local Redis at the default address').toBe('redis://127.0.0.1:6379');
    const prefix = redis.prefix('noenv');
    const env = { ...fleetEnv(prefix), REDIS_URL: undefined };
    const firstLine = (r: CliResult) => r.stderr.split('\n')[0];
    const w = await startWorker(['--state-dir', state(), '--runtime', 'command'], {
      cwd: repo,
      env: { ...env, UH_LOG_LEVEL: 'warn' },
    });
    workers.push(w);
    expect(w.output().split('\n')[0]).toBe(NOTICE);

    const { path, operationId } = writeMission(repo, ['noop']);
    const submitted = await runCli(['mission', 'submit', path, '--wait', '--json', '--state-dir', state()], {
      cwd: repo,
      env,
    });
    expect(submitted.code).toBe(0);
    expect(firstLine(submitted)).toBe(NOTICE);
    expect(json(submitted)).toMatchObject({ operation_id: operationId, status: 'completed' });

    const watched = await runCli(['mission', 'watch', operationId, '--json'], { cwd: repo, env });
    expect(watched.code).toBe(0);
    expect(firstLine(watched)).toBe(NOTICE);
    expect(watched.stdout).not.toContain('REDIS_URL');
    expect(
      watched.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).type),
    ).toContain('operation.completed');

    const status = await runCli(['mission', 'status', operationId, '--redis', redis.url, '--json'], { cwd: repo, env });
    expect(status.code).toBe(0);
    expect(status.stderr).not.toContain(NOTICE); // --redis given: nothing defaulted

    const doctor = await runCli(['doctor', '--json'], { cwd: repo, env });
    expect(firstLine(doctor)).toBe(NOTICE);
    expect(json(doctor).findings).toContainEqual(expect.objectContaining({ what: 'redis', ok: true }));
  });
});
