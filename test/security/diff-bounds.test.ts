/**
 * The diff is bounded (issue 34), inline and through a worker:
 * - its size: past `UH_DIFF_CAP_BYTES` (a small cap here) `diff.patch` keeps the cap's bytes and
 *   a marker, the receipt says `diff.truncated` with the total, the changed files and the scope
 *   check stay complete, and promotion refuses it (a partial patch would commit a tree nobody
 *   checked);
 * - its time: the diff phase is inside `timeout_seconds` (the deadline covers the runtime and the
 *   diff): a change whose diff outlasts what the runtime left (a sparse 3 GiB file: instant to
 *   write, seconds of hashing for git) ends `failed`, `timed_out`, naming the diff, soon after the
 *   deadline, and the next mission on the same worker is verified.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

type Mode = 'inline' | 'worker';
const CAP = 64 * 1024;
const dirs: string[] = [];
let redis: TestRedis;
let counter = 0;

interface Fleet {
  mode: Mode;
  repo: string;
  cacheDir: string;
  stateDir: string;
  prefix: string;
  worker: WorkerProcess | null;
}

const env = (f: Fleet): Record<string, string> => ({
  UH_CACHE_DIR: f.cacheDir,
  UH_DIFF_CAP_BYTES: String(CAP),
  REDIS_URL: redis.url,
  UH_REDIS_PREFIX: f.prefix,
});

async function run(f: Fleet, script: string, patch: Record<string, unknown> = {}) {
  const body = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-diff-bounds',
    operation_id: `op-dbound-${process.pid}-${++counter}`,
    title: 'diff bounds',
    objective: 'write a large change',
    repository: { url: f.repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['/bin/sh', '-c', script], kill_grace_ms: 500 } },
    verification: [{ name: 'present', argv: ['test', '-f', 'src/small.txt'], timeout_seconds: 30 }],
    timeout_seconds: 60,
    ...patch,
  };
  const dir = tempDir('uh-dbound-mission-');
  dirs.push(dir);
  writeFileSync(join(dir, 'mission.yaml'), stringify(body));
  const verb = f.mode === 'inline' ? ['run'] : ['submit', '--wait'];
  const args = ['mission', ...verb, join(dir, 'mission.yaml'), '--json', '--state-dir', f.stateDir];
  const started = Date.now();
  const result = await runCli(args, { cwd: f.repo, env: env(f) });
  try {
    const out = JSON.parse(result.stdout);
    return { receipt: out.receipt ?? out, wallMs: Date.now() - started, operationId: body.operation_id };
  } catch {
    throw new Error(`uh exited ${result.code}: ${result.stderr}\n${result.stdout}`);
  }
}

beforeAll(async () => {
  redis = await startTestRedis('dbound');
});

afterAll(async () => {
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

describe.each(['inline', 'worker'] as const)('diff bounds (%s)', (mode) => {
  let f: Fleet;

  beforeAll(async () => {
    const repo = makeRepo({ 'README.md': '# demo\n', 'src/app.txt': 'v1\n' });
    const cacheDir = tempDir('uh-dbound-cache-');
    const stateDir = tempDir('uh-dbound-state-');
    dirs.push(repo, cacheDir, stateDir);
    f = { mode, repo, cacheDir, stateDir, prefix: redis.prefix(`dbound-${++counter}`), worker: null };
    if (mode === 'worker') {
      const workerState = tempDir('uh-dbound-wstate-');
      dirs.push(workerState);
      f.worker = await startWorker(['--state-dir', workerState, '--runtime', 'command', '--concurrency', '1'], {
        cwd: repo,
        env: { ...env(f), UH_LOG_LEVEL: 'warn' },
      });
    }
  }, 60_000);

  afterAll(async () => {
    await f?.worker?.stop('SIGKILL');
  });

  it('a diff past UH_DIFF_CAP_BYTES is cut with a marker, flagged truncated in the receipt, complete in its names, never promoted', async () => {
    // ~1.3 MB of text: its patch is ~20× the cap.
    const { receipt, operationId } = await run(f, 'seq 1 200000 > src/big.txt; echo small > src/small.txt');
    expect(receipt.verdict).toBe('verified');
    expect(receipt.changed_files.map((c: { path: string }) => c.path)).toEqual(['src/big.txt', 'src/small.txt']);
    expect(receipt.diff).toMatchObject({ truncated: true, cap_bytes: CAP });
    expect(receipt.diff.bytes_total).toBeGreaterThan(1_000_000);
    expect(receipt.diff_bytes).toBeGreaterThan(CAP);
    expect(receipt.diff_bytes).toBeLessThan(CAP + 512); // the cap and the marker line, nothing more
    if (mode === 'inline') {
      const patch = join(f.stateDir, 'operations', operationId, 'diff.patch');
      expect(statSync(patch).size).toBe(receipt.diff_bytes);
      expect(readFileSync(patch, 'utf8')).toMatch(
        new RegExp(
          `uh truncated this diff at UH_DIFF_CAP_BYTES: kept the first ${CAP} of ${receipt.diff.bytes_total} bytes`,
        ),
      );
    }
    const promote =
      mode === 'inline'
        ? ['mission', 'promote', operationId, '--state-dir', f.stateDir]
        : ['mission', 'promote', operationId, '--redis', redis.url];
    const refused = await runCli(promote, { cwd: f.repo, env: env(f) });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/diff was truncated at 65536 of \d+ bytes/);

    // Under the cap: the receipt says so, and nothing is cut.
    const small = await run(f, 'echo small > src/small.txt');
    expect(small.receipt.diff).toEqual({ truncated: false, bytes_total: small.receipt.diff_bytes, cap_bytes: CAP });
  }, 120_000);

  it('a diff that outlasts what timeout_seconds left ends the mission timed out, naming the diff; the next mission is healthy', async () => {
    const { receipt, wallMs } = await run(f, 'echo small > src/small.txt; truncate -s 3G src/huge.bin', {
      timeout_seconds: 3,
    });
    expect(receipt.status).toBe('failed');
    expect(receipt.outcome).toMatchObject({ raw: 'timeout', timed_out: true });
    expect(receipt.outcome.message).toMatch(/the diff of the sandbox did not finish/);
    expect(receipt.verdict).not.toBe('verified');
    expect(receipt.checks).toEqual([]);
    // git hashing 3 GiB takes far longer; the mission ends near its deadline.
    expect(wallMs).toBeLessThan(30_000);
    const next = await run(f, 'echo small > src/small.txt');
    expect(next.receipt.verdict).toBe('verified');
  }, 120_000);
});
