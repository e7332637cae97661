/**
 * The artifact store (docs/state-layout.md "The artifact store"): a real worker settles 100
 * operations with 100 KB diffs into a directory store and into an S3-compatible one (s3rver);
 * after the retention pass trims their events, Redis holds under 2 KB per operation (MEMORY USAGE
 * over every key of the fleet's prefix, BullMQ's included), and every artifact comes back from the
 * store byte for byte with its receipt verifying; the API serves a diff from S3; a store that
 * fails mid-write leaves the record unsettled, never a pointer to nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { openArtifactStore } from '../../src/shared/artifacts/open-artifact-store.js';
import { ArtifactStore, type BlobStore } from '../../src/shared/artifacts/artifact-store.js';
import { DirBlobStore } from '../../src/shared/artifacts/dir-blob-store.js';
import { OperationStore } from '../../src/shared/queue/operation-store.js';
import { completionOf, eventJson, type OperationJob } from '../../src/shared/queue/queue-record.js';
import { materialize } from '../../src/producers/queue/materialize.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { loadKeyring } from '../../src/operation/receipt-keys.js';
import { receiptTrustOfText } from '../../src/operation/receipt-trust.js';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { startTestS3, type TestS3 } from '../support/s3-server.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker } from '../support/worker-process.js';

const OPS = 100;
const BOUND_BYTES = 2048;
const TOKEN = 't'.repeat(40);

let redis: TestRedis;
let s3: TestS3;
const dirs: string[] = [];
const temp = (prefix: string): string => {
  const dir = tempDir(prefix);
  dirs.push(dir);
  return dir;
};

beforeAll(async () => {
  redis = await startTestRedis('artifact-store');
  s3 = await startTestS3();
}, 60_000);

afterAll(async () => {
  await s3?.stop();
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

/** Every key of the fleet's prefix (BullMQ's among them) and its MEMORY USAGE, summed. */
async function redisBytes(prefix: string): Promise<{ total: number; keys: number; biggest: Array<[string, number]> }> {
  const sizes: Array<[string, number]> = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.redis.scan(cursor, 'MATCH', `{${prefix}}*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) sizes.push([key, Number(await redis.redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'))]);
  } while (cursor !== '0');
  sizes.sort((a, b) => b[1] - a[1]);
  return { total: sizes.reduce((n, [, b]) => n + b, 0), keys: sizes.length, biggest: sizes.slice(0, 8) };
}

/** 100 missions whose agent writes ~110 KB of its own lines: each diff is over 100 KB and unlike the others. */
function writeMissions(repo: string, tag: string): { files: string[]; ids: string[] } {
  const dir = temp('uh-art-missions-');
  const ids = Array.from({ length: OPS }, (_, i) => `op-art-${tag}-${process.pid}-${i}`);
  const files = ids.map((id, i) => {
    const file = join(dir, `${i}.yaml`);
    const script = `seq 1 8000 | sed 's/^/${tag}-${i}-line-/' > big.txt`;
    writeFileSync(
      file,
      stringify({
        schema_version: 'uh.mission.v0',
        mission_id: 'm-artifacts',
        operation_id: id,
        title: 'a large diff',
        objective: 'write big.txt',
        repository: { url: repo, ref: 'main' },
        runtime: 'command',
        runtime_config_overrides: { command: { argv: ['/bin/sh', '-c', script] } },
        timeout_seconds: 120,
      }),
    );
    return file;
  });
  return { files, ids };
}

async function untilAllSettled(store: OperationStore, ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const records = await store.getMany(ids);
    const open = records.filter((r) => r?.state !== 'finished').length;
    if (open === 0) return;
    if (Date.now() > deadline) throw new Error(`${open} of ${ids.length} operations not finished in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function untilTrimmed(store: OperationStore, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [settled, outbox] = await Promise.all([
      store.redis.zcard(store.keys.settled),
      store.redis.xlen(store.keys.outbox),
    ]);
    if (settled === 0 && outbox === 0) return;
    if (Date.now() > deadline)
      throw new Error(`not trimmed in ${timeoutMs} ms: ${settled} streams, ${outbox} outbox entries`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.each([
  ['dir', () => ({ UH_ARTIFACT_STORE: `dir:${temp('uh-art-store-')}` })],
  ['s3', () => ({ UH_ARTIFACT_STORE: `s3://${s3.bucket}/fleet-a`, UH_ARTIFACT_STORE_S3_FILE: s3.settingsFile })],
] as const)('artifact store %s', (kind, storeEnv) => {
  it(`${OPS} settled operations with 100 KB diffs: under 2 KB of Redis each, every artifact collected back`, async () => {
    const repo = makeRepo({ 'README.md': '# artifacts\n' });
    dirs.push(repo);
    const prefix = redis.prefix(`bytes-${kind}`);
    const cacheDir = temp('uh-art-cache-');
    const workerState = temp('uh-art-wstate-');
    const env = {
      ...storeEnv(),
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: prefix,
      UH_CACHE_DIR: cacheDir,
      UH_ISOLATION: 'off',
      // The worker's retention sweep every 2 s, events kept 0 minutes after settling.
      UH_GC_INTERVAL_MS: '2000',
      UH_EVENT_RETENTION_MINUTES: '0',
    };
    const { files, ids } = writeMissions(repo, kind);
    const worker = await startWorker(['--runtime', 'command', '--concurrency', '3', '--state-dir', workerState], {
      cwd: repo,
      env,
    });
    // The results worker acknowledges each completion (reading its receipt from the store to verify it).
    const results = await startWorker(['--results', '--state-dir', temp('uh-art-rstate-')], { cwd: repo, env });
    const config = loadConfig(env);
    const store = new OperationStore(
      new Redis(redis.url, { maxRetriesPerRequest: null }),
      prefix,
      openArtifactStore(config.queue.artifactStore),
    );
    try {
      const submitted = await runCli(['mission', 'submit', ...files, '--json', '--state-dir', temp('uh-art-ps-')], {
        cwd: repo,
        env,
      });
      expect(submitted.code, submitted.stderr).toBe(0);
      await untilAllSettled(store, ids, 480_000);
      // The worker's sweep trims what retention allows: every settled stream, the acknowledged outbox.
      await untilTrimmed(store, 120_000);
      expect(await worker.stop('SIGTERM')).toBe(0);
      expect(await results.stop('SIGTERM')).toBe(0);
      expect(await store.redis.xlen(store.keys.outboxDead)).toBe(0); // every receipt verified by the results worker
      const used = await redisBytes(prefix);
      const perOp = used.total / OPS;
      console.log(
        `artifact store ${kind}: ${used.total} bytes of Redis over ${used.keys} keys for ${OPS} settled operations = ${perOp.toFixed(0)} B/op; biggest: ${JSON.stringify(used.biggest)}`,
      );
      expect(perOp).toBeLessThan(BOUND_BYTES);

      // Every artifact back from the store (what `uh mission collect` writes), byte for byte.
      const keyring = loadKeyring(config.receipts);
      for (const id of ids) {
        const local = join(workerState, 'operations', id);
        const out = temp('uh-art-collect-');
        const got = await materialize(store, id, out);
        const diff = readFileSync(join(out, 'diff.patch'));
        expect(diff.length).toBeGreaterThan(100_000);
        expect(diff.equals(readFileSync(join(local, 'diff.patch')))).toBe(true);
        expect(readFileSync(join(out, 'receipt.json')).equals(readFileSync(join(local, 'receipt.json')))).toBe(true);
        expect(receiptTrustOfText(got.receiptText ?? '', keyring).state).toBe('valid');
        const events = readFileSync(join(out, 'events.jsonl'), 'utf8').trim().split('\n');
        expect(events.map((l) => JSON.parse(l).type)).toContain('operation.completed');
        removeDir(out);
      }
      // The CLI on "another host" (no state dir of the worker's): collect from the store, verify the receipt.
      const out = temp('uh-art-cli-');
      const collected = await runCli(['mission', 'collect', ids[OPS - 1] as string, '--out', out, '--json'], {
        cwd: repo,
        env,
      });
      expect(collected.code, collected.stderr).toBe(0);
      const verified = await runCli(['receipt', 'verify', join(out, 'receipt.json')], { cwd: repo, env });
      expect(verified.code, verified.stderr + verified.stdout).toBe(0);
      expect(readFileSync(join(out, 'diff.patch')).length).toBeGreaterThan(100_000);
      const watched = await runCli(['mission', 'watch', ids[0] as string, '--json'], { cwd: repo, env });
      expect(watched.code, watched.stderr).toBe(0);
      expect(watched.stdout).toContain('operation.completed');
    } finally {
      if (worker.child.exitCode === null) await worker.stop('SIGKILL');
      if (results.child.exitCode === null) await results.stop('SIGKILL');
      store.redis.disconnect();
    }
  }, 600_000);
});

describe('the API reads from the S3 store', () => {
  it("serves a settled operation's diff, receipt and transcript from S3, with its events trimmed from Redis", async () => {
    const prefix = redis.prefix('api-s3');
    const env = { UH_ARTIFACT_STORE: `s3://${s3.bucket}/fleet-api`, UH_ARTIFACT_STORE_S3_FILE: s3.settingsFile };
    const config = loadConfig({ ...env, UH_REDIS_PREFIX: prefix });
    const client = await QueueClient.open(config.queue, redis.url);
    const id = 'op-api-s3';
    const diff = `diff --git a/x b/x\n${'+a line of the diff\n'.repeat(6000)}`;
    await settleOne(client.store, id, { diff, receipt: '{"schema_version":"uh.receipt.v0"}\n' });
    expect(await client.store.trimSettledEvents(0)).toBe(1);
    expect(await client.store.redis.exists(client.store.keys.events(id))).toBe(0);
    const app = await buildApiServer({
      client,
      config: readApiConfig({ UH_API_TOKEN: TOKEN }, '127.0.0.1'),
      stateDir: temp('uh-api-state-'),
      cacheDir: temp('uh-api-cache-'),
      baseDir: temp('uh-api-base-'),
      repositoryPolicy: { allowLocal: true, allowHttp: false },
      prices: {},
      receiptKey: { key: 'k'.repeat(32), keyFile: '/nonexistent/receipt.key' },
      promotionIdentity: {
        author: { name: 'T', email: 't@localhost' },
        committer: { name: 'T', email: 't@localhost' },
      },
    });
    try {
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      const get = (path: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const got = await get(`/v1/operations/${id}/diff`);
      expect(got.status).toBe(200);
      expect(await got.text()).toBe(diff);
      const transcript = await get(`/v1/operations/${id}/transcript`);
      expect(transcript.status).toBe(200);
      expect(
        (await transcript.text())
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l).type),
      ).toEqual(['operation.queued', 'operation.completed']);
      const sse = await get(`/v1/operations/${id}/events`);
      expect(await sse.text()).toContain('operation.completed');
      // Nothing of the diff is in Redis: the record holds the manifest's digest.
      const record = await client.store.redis.hgetall(client.store.keys.op(id));
      expect(JSON.stringify(record)).not.toContain('a line of the diff');
      expect(record.artifacts).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      await app.close();
      await client.close();
    }
  });
});

/** A running operation settled through the store's own settle, as finishOperation does. */
async function settleOne(store: OperationStore, id: string, artifacts: Record<string, string>): Promise<boolean> {
  const job: OperationJob = {
    operation_id: id,
    runtime: 'command',
    mission: { title: 't' },
    base_commit: 'a'.repeat(40),
    contract_digest: `sha256:${'c'.repeat(64)}`,
    attempt: 1,
  };
  if ((await store.get(id)) === null) {
    await store.createOrAttach(job, { mission_id: 'm', prompt_digest: `sha256:${'d'.repeat(64)}` });
    await store.appendEvent(id, eventJson(id, 'operation.queued', {}));
    await store.claim(id, 'owner-1', { id: 'w', host: 'h', pid: 1 }, `op.${id}`, completionOf({ ...job }));
  }
  return store.settle(id, {
    owner: 'owner-1',
    allowedStates: ['running', 'verifying'],
    record: { state: 'finished', status: 'completed', verdict: 'unverified', exit_code: 0 },
    artifacts,
    event: eventJson(id, 'operation.completed', { status: 'completed' }),
    completion: completionOf(job, { state: 'finished', status: 'completed', exit_code: 0 }),
  });
}

describe('a crash between writing artifacts and settling', () => {
  it('leaves the record running with no pointer and no completion; the next settle succeeds and reads back whole', async () => {
    const prefix = redis.prefix('crash');
    const root = temp('uh-art-crash-');
    let failManifest = true;
    const dir = new DirBlobStore(root);
    // The store dies after the diff is written and before the manifest is: the worst moment.
    const dying: BlobStore = {
      description: dir.description,
      get: (d) => dir.get(d),
      put: async (digest, body) => {
        if (failManifest && body.toString('utf8').includes('uh.artifacts.v0')) throw new Error('store went away');
        await dir.put(digest, body);
      },
    };
    const store = new OperationStore(
      new Redis(redis.url, { maxRetriesPerRequest: null }),
      prefix,
      new ArtifactStore(dying),
    );
    try {
      const id = 'op-crash';
      const diff = `diff --git a/y b/y\n${'+y\n'.repeat(40_000)}`;
      await expect(settleOne(store, id, { diff, receipt: '{"r":1}\n' })).rejects.toThrow('store went away');
      const record = await store.get(id);
      expect(record?.state).toBe('running');
      expect(record?.artifacts).toBeNull();
      expect(await store.redis.xlen(store.keys.outbox)).toBe(0);
      expect(await store.runningIds()).toContain(id);

      failManifest = false;
      expect(await settleOne(store, id, { diff, receipt: '{"r":1}\n' })).toBe(true);
      expect((await store.get(id))?.state).toBe('finished');
      expect(await store.artifact(id, 'diff')).toBe(diff);
      expect(await store.redis.xlen(store.keys.outbox)).toBe(1);
      // A blob edited in the store is refused, never served as the operation's.
      const pointer = (await store.get(id))?.artifacts as string;
      const manifest = await store.artifactStore?.manifest(pointer);
      const diffDigest = manifest?.files.diff?.digest.slice('sha256:'.length) as string;
      writeFileSync(join(root, 'sha256', diffDigest.slice(0, 2), diffDigest), 'forged\n');
      await expect(store.artifact(id, 'diff')).rejects.toThrow('does not match its digest');
    } finally {
      store.redis.disconnect();
    }
  });
});
