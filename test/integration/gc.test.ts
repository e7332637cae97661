/**
 * Disk stays bounded (issue 12): a worker's retention sweep (start + interval) empties its
 * sandboxes dir under retention 0, the cap evicts oldest kept sandboxes before idle mirrors,
 * `uh gc --dry-run` lists without deleting, and a killed worker's sandbox is collected once its
 * operation is settled. Real Redis, real worker processes, real git, the fake agent.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { loadMissionFile } from '../../src/shared/contracts/load-mission.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { submitOperation } from '../../src/producers/submit.js';
import { applyGc, planGc } from '../../src/workers/sandbox/gc.js';
import { pruneRecords } from '../../src/shared/queue/prune-records.js';
import { readRecords, sandboxesRoot, writeRecord } from '../../src/workers/sandbox/worktree.js';
import { runCli } from '../support/cli.js';
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
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
const orphans: number[] = [];

beforeAll(async () => {
  redis = await startTestRedis('gc');
  repo = makeRepo({ 'README.md': '# demo\n' });
  dirs.push(repo);
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

const dir = (p: string) => {
  const d = tempDir(p);
  dirs.push(d);
  return d;
};
/** Sandbox dirs (the dot dirs hold their records and uh's private git dirs: see privateEntries). */
const sandboxEntries = (cacheDir: string) =>
  existsSync(sandboxesRoot(cacheDir)) ? readdirSync(sandboxesRoot(cacheDir)).filter((e) => !e.startsWith('.')) : [];
/** uh's private git dir and index per sandbox (`sandboxes/.uh/<name>`): removed with their sandbox. */
const privateEntries = (cacheDir: string) =>
  existsSync(join(sandboxesRoot(cacheDir), '.uh')) ? readdirSync(join(sandboxesRoot(cacheDir), '.uh')) : [];

describe('a worker with retention 0', () => {
  it('runs 50 missions (half failing, so retained) and its sandboxes dir ends holding only the warm pool', async () => {
    const prefix = redis.prefix('fifty');
    const cacheDir = dir('uh-gcache-');
    const env = {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: prefix,
      UH_CACHE_DIR: cacheDir,
      UH_SANDBOX_KEEP_HOURS: '0',
      UH_GC_INTERVAL_MS: '500',
    };
    const w = await startWorker(['--runtime', 'command', '--concurrency', '4', '--state-dir', dir('uh-gstate-')], {
      cwd: repo,
      env: { ...env, UH_LOG_LEVEL: 'warn' },
    });
    workers.push(w);
    const config = loadConfig({ ...process.env, ...env });
    const client = await QueueClient.open(config.queue, redis.url);
    const ids: string[] = [];
    const started = Date.now();
    try {
      for (let i = 0; i < 50; i += 1) {
        const { path, operationId } = writeMission(repo, i % 2 === 0 ? ['noop'] : ['exit', '1']);
        await submitOperation(client, loadMissionFile(path), { stateDir: dir('uh-gsub-'), cacheDir });
        ids.push(operationId);
      }
      const settled = async () =>
        (await Promise.all(ids.map((id) => client.store.get(id)))).every((r) => r?.state === 'finished');
      const deadline = Date.now() + 100_000;
      while (!(await settled()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
      expect(await settled()).toBe(true);
    } finally {
      await client.close();
    }
    const ranMs = Date.now() - started;
    // Left: only the warm pool (UH_SANDBOX_POOL_SIZE, default 2 per mirror), each with its private dir.
    const onlyPool = () => {
      const pooled = readRecords(cacheDir)
        .filter((r) => r.state === 'pooled')
        .map((r) => r.name)
        .sort();
      const names = sandboxEntries(cacheDir).sort();
      return (
        pooled.length <= 2 &&
        JSON.stringify(names) === JSON.stringify(pooled) &&
        JSON.stringify(privateEntries(cacheDir).sort()) === JSON.stringify(pooled)
      );
    };
    expect(await waitFor(onlyPool, 10_000)).toBe(true);
    process.stderr.write(
      `gc: 50 missions through one worker (concurrency 4) in ${ranMs} ms; sandboxes dir holds only the warm pool\n`,
    );
  }, 120_000);
});

describe('the cache cap', () => {
  it('evicts the oldest kept sandboxes first, then idle mirrors (oldest first), and stops at the cap', async () => {
    const cacheDir = dir('uh-capcache-');
    const mirrorsRoot = join(cacheDir, 'mirrors');
    const mk = (path: string, bytes: number) => {
      mkdirSync(path, { recursive: true });
      writeFileSync(join(path, 'blob'), Buffer.alloc(bytes));
    };
    const used = join(mirrorsRoot, 'used.git');
    mk(used, 1000);
    for (const [name, age] of [
      ['idle-old.git', 9],
      ['idle-new.git', 1],
    ] as const) {
      mk(join(mirrorsRoot, name), 1000);
      const t = new Date(Date.now() - age * 3600_000);
      utimesSync(join(mirrorsRoot, name), t, t);
    }
    for (const [name, hoursAgo] of [
      ['s-new', 1],
      ['s-old', 5],
      ['s-mid', 3],
    ] as const) {
      const path = join(sandboxesRoot(cacheDir), name);
      mk(path, 1000);
      const at = new Date(Date.now() - hoursAgo * 3600_000).toISOString();
      writeRecord(cacheDir, {
        name,
        path,
        mirror: used,
        operation_id: `op-${name}`,
        commit: 'c'.repeat(40),
        created_at: at,
        keep_until: new Date(Date.now() + 3600_000).toISOString(),
        state: 'retained',
      });
    }
    const policy = { now: new Date(), mirrorIdleDays: 30, operationRetentionDays: 30, cacheCapBytes: 2500 };
    const plan = await planGc(cacheDir, null, policy, { operationState: async () => 'finished' });
    // 6 × ~1000 B; the cap 2500 B: three sandboxes oldest first, then the older idle mirror.
    expect(plan.map((i) => [i.kind, i.path.split('/').pop()])).toEqual([
      ['sandbox_cap', 's-old'],
      ['sandbox_cap', 's-mid'],
      ['sandbox_cap', 's-new'],
      ['mirror_cap', 'idle-old.git'],
    ]);
  });

  it('base-commit facts written before the mirrors idle limit go; fresher ones stay', async () => {
    const cacheDir = dir('uh-factscache-');
    const facts = join(cacheDir, 'derived', 'base-facts');
    mkdirSync(facts, { recursive: true });
    for (const [name, days] of [
      ['a'.repeat(40), 20],
      [`${'a'.repeat(40)}.exclude`, 20],
      ['b'.repeat(40), 2],
    ] as const) {
      writeFileSync(join(facts, name), 'x');
      const t = new Date(Date.now() - days * 24 * 3600_000);
      utimesSync(join(facts, name), t, t);
    }
    const plan = await planGc(
      cacheDir,
      null,
      { now: new Date(), mirrorIdleDays: 14, operationRetentionDays: 30, cacheCapBytes: 0 },
      { operationState: async () => 'finished' },
    );
    expect(plan.map((i) => [i.kind, i.path.split('/').pop()]).sort()).toEqual([
      ['facts_idle', 'a'.repeat(40)],
      ['facts_idle', `${'a'.repeat(40)}.exclude`],
    ]);
    await applyGc(cacheDir, plan, new Date());
    expect(readdirSync(facts)).toEqual(['b'.repeat(40)]);
  });
});

describe('uh gc', () => {
  it('--dry-run lists a retained sandbox with its size without deleting; uh gc then frees it', async () => {
    const cacheDir = dir('uh-drycache-');
    const stateDir = dir('uh-drystate-');
    const env = { UH_CACHE_DIR: cacheDir, UH_SANDBOX_KEEP_HOURS: '1', REDIS_URL: '' };
    const failed = await runCli(['mission', 'run', writeMission(repo, ['exit', '1']).path, '--state-dir', stateDir], {
      cwd: repo,
      env,
    });
    expect(failed.code).toBe(1);
    expect(sandboxEntries(cacheDir)).toHaveLength(1);
    const dry = await runCli(['gc', '--dry-run', '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { ...env, UH_CACHE_CAP_BYTES: '1' },
    });
    expect(dry.code).toBe(0);
    const listed = JSON.parse(dry.stdout);
    expect(listed.dry_run).toBe(true);
    expect(listed.items.find((i: { kind: string }) => i.kind === 'sandbox_cap')?.bytes).toBeGreaterThan(0);
    expect(sandboxEntries(cacheDir)).toHaveLength(1);
    const real = await runCli(['gc', '--state-dir', stateDir], { cwd: repo, env: { ...env, UH_CACHE_CAP_BYTES: '1' } });
    expect(real.code).toBe(0);
    expect(real.stdout).toMatch(/freed +\d+ B +sandbox_cap/);
    expect(sandboxEntries(cacheDir)).toHaveLength(0);
  });
});

describe("a killed worker's sandbox", () => {
  it('stays while the operation is unknown and is collected by a live worker once recover settled it', async () => {
    const prefix = redis.prefix('killgc');
    const cacheDir = dir('uh-kcache-');
    const env = {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: prefix,
      UH_CACHE_DIR: cacheDir,
      UH_HEARTBEAT_MS: '1000',
      UH_GC_INTERVAL_MS: '500',
    };
    const countFile = join(dir('uh-count-'), 'count');
    const { path, operationId } = writeMission(repo, ['count', countFile, 'slow', '60000']);
    const victim = await startWorker(['--runtime', 'command', '--state-dir', dir('uh-kstate-')], {
      cwd: repo,
      env: { ...env, UH_LOG_LEVEL: 'warn' },
    });
    workers.push(victim);
    expect((await runCli(['mission', 'submit', path, '--state-dir', dir('uh-ks-')], { cwd: repo, env })).code).toBe(0);
    const pid = () => (existsSync(countFile) ? Number(readFileSync(countFile, 'utf8').trim().split('\n')[0]) : 0);
    expect(await waitFor(() => pid() > 0, 20_000)).toBe(true);
    orphans.push(pid());
    await victim.stop('SIGKILL');
    const live = await startWorker(['--runtime', 'command', '--state-dir', dir('uh-kstate-')], {
      cwd: repo,
      env: { ...env, UH_LOG_LEVEL: 'warn' },
    });
    workers.push(live);
    const key = `{${prefix}}:op:${operationId}`;
    const deadline = Date.now() + 30_000;
    while ((await redis.redis.hget(key, 'state')) !== 'unknown' && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 200));
    expect(await redis.redis.hget(key, 'state')).toBe('unknown');
    const sandbox = (await redis.redis.hget(key, 'sandbox_path')) as string;
    expect(existsSync(sandbox)).toBe(true); // unknown: kept as evidence
    const recovered = await runCli(['mission', 'recover', operationId, '--json'], { cwd: repo, env });
    expect(JSON.parse(recovered.stdout).operation.state).toBe('finished');
    expect(await waitFor(() => !existsSync(sandbox), 10_000)).toBe(true);
  });
});

describe('Redis retention', () => {
  it('prunes the records, events and artifacts of settled operations past the retention, never a queued one', async () => {
    const prefix = redis.prefix('prune');
    const cacheDir = dir('uh-pcache-');
    const env = { REDIS_URL: redis.url, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir };
    const w = await startWorker(['--runtime', 'command', '--state-dir', dir('uh-pstate-')], {
      cwd: repo,
      env: { ...env, UH_LOG_LEVEL: 'warn' },
    });
    workers.push(w);
    const config = loadConfig({ ...process.env, ...env });
    const client = await QueueClient.open(config.queue, redis.url);
    try {
      const done = writeMission(repo, ['noop']);
      await submitOperation(client, loadMissionFile(done.path), { stateDir: dir('uh-psub-'), cacheDir });
      // No worker serves pi here: this one stays queued.
      const waiting = writeMission(repo, ['noop']);
      const piMission = { ...loadMissionFile(waiting.path), runtime: 'pi', runtime_config_overrides: {} };
      await submitOperation(client, piMission, { stateDir: dir('uh-psub-'), cacheDir });
      const deadline = Date.now() + 30_000;
      while ((await client.store.get(done.operationId))?.state !== 'finished' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect((await client.store.get(done.operationId))?.state).toBe('finished');
      const keysOf = async (id: string) => (await redis.redis.keys(`{${prefix}}:op:${id}*`)).length;
      expect(await keysOf(done.operationId)).toBeGreaterThanOrEqual(3); // record, events, artifacts

      const kept = await pruneRecords(client.store, new Date(Date.now() - 3_600_000)); // retention 1 h: both too young
      expect(kept.removed).toEqual([]);
      const pruned = await pruneRecords(client.store, new Date(Date.now() + 1000)); // retention 0
      expect(pruned.removed).toEqual([done.operationId]);
      expect(pruned.kept).toBe(1);
      expect(await keysOf(done.operationId)).toBe(0);
      expect(await redis.redis.zscore(client.store.keys.index, done.operationId)).toBeNull();
      expect((await client.store.get(waiting.operationId))?.state).toBe('queued');
    } finally {
      await client.close();
    }
  }, 60_000);
});
