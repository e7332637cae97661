/**
 * The fleet half of cow-missions.ts: 2 `uh worker start --runtime command --concurrency 4`
 * processes sharing the run's cache (so its base checkout), on Redis at $REDIS_URL (default
 * redis://127.0.0.1:6379) under a fresh `UH_REDIS_PREFIX`, its keys removed afterwards. The
 * producer has a cache of its own, as on another host. One mission through the fleet first
 * (untimed: the producer's mirror, the workers' module caches), then `n` `uh mission submit
 * --wait --json` processes at once, timed from the first start to the last exit, the cache's
 * sandboxes dir sampled meanwhile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { checkReceipt, missionFile, uh, UH, type CowRun, type Receipt } from './cow-kit.js';
import { sampleDisk } from './disk-sampler.js';

function startWorker(run: CowRun, env: NodeJS.ProcessEnv, stateDir: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const args = [UH, 'worker', 'start', '--runtime', 'command', '--concurrency', '4', '--state-dir', stateDir];
    const child = spawn(process.execPath, args, { cwd: run.root, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr?.on('data', (c) => {
      err += c;
      if (err.includes('ready')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`uh worker start exited ${code}: ${err.slice(-2000)}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.removeAllListeners('exit');
    child.once('exit', () => {
      child.stderr?.destroy(); // 'exit' can come before the pipe closes: the bench would end with it open
      resolve();
    });
    child.kill('SIGTERM');
  });
}

type RedisClient = import('ioredis').Redis;

/** Close a client and wait for its socket to go (quit resolves before it does: the bench would end with it open). */
async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'wait' || redis.status === 'end') return void redis.disconnect();
  const ended = new Promise<void>((resolve) => {
    redis.once('end', () => resolve());
    setTimeout(resolve, 2000).unref();
  });
  if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
  else redis.disconnect();
  await ended;
}

/** Delete every key under the prefix (uh's keys are hash-tagged: `{prefix}:…`). */
async function dropKeys(redisUrl: string, prefix: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `{${prefix}}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    await closeRedis(redis);
  }
}

/** Null when Redis answers PING at `url`, else why not. */
async function redisProblem(url: string): Promise<string | null> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (error) {
    return `no Redis at ${url}: ${(error as Error).message}`;
  } finally {
    await closeRedis(redis);
  }
}

/** `uh mission submit --wait --json` of a new mission `id`; its checked receipt. */
async function submitAndWait(run: CowRun, env: NodeJS.ProcessEnv, id: string): Promise<Receipt> {
  const args = ['mission', 'submit', missionFile(run, id), '--wait', '--timeout', '900', '--json'];
  const r = await uh(run, [...args, '--state-dir', join(run.root, 'producer-state')], env);
  if (r.code !== 0) throw new Error(`uh mission submit --wait ${id}: exit ${r.code}: ${r.stderr.slice(-2000)}`);
  return checkReceipt(run, JSON.parse(r.stdout) as Receipt);
}

/** The timed fleet run of `n` missions, or why it was skipped. */
export async function runWorkerFleet(
  run: CowRun,
  n: number,
): Promise<{ wall: number; peak: number; samples: number } | string> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const problem = await redisProblem(redisUrl);
  if (problem !== null) return problem;
  const prefix = `uhbench-cow-${process.pid}`;
  // One artifact store for the fleet and the producer, as every host of a fleet names (docs/deploy.md).
  const shared = {
    REDIS_URL: redisUrl,
    UH_REDIS_PREFIX: prefix,
    UH_ARTIFACT_STORE: `dir:${join(run.root, 'artifacts')}`,
  };
  const fleetEnv = { ...run.env, ...shared };
  // The workers sign with the key the inline runs made in their cache; the producer trusts its public half.
  const producerEnv = {
    ...shared,
    UH_CACHE_DIR: join(run.root, 'producer-cache'),
    UH_RECEIPT_PUBLIC_KEYS: join(run.cacheDir, 'receipt-signing.pub'),
  };
  const workers: ChildProcess[] = [];
  try {
    for (const w of ['w1', 'w2']) workers.push(await startWorker(run, fleetEnv, join(run.root, `state-${w}`)));
    await submitAndWait(run, producerEnv, 'fleet-prime');
    const sampler = sampleDisk(join(run.cacheDir, 'sandboxes'));
    const t0 = performance.now();
    const ends = await Promise.allSettled(
      Array.from({ length: n }, (_, i) => submitAndWait(run, producerEnv, `fleet-${i + 1}`)),
    );
    const wall = performance.now() - t0;
    const disk = await sampler.stop();
    const failed = ends.find((e) => e.status === 'rejected');
    if (failed) throw failed.reason;
    return { wall, ...disk };
  } finally {
    await Promise.all(workers.map(stop));
    await dropKeys(redisUrl, prefix);
  }
}
