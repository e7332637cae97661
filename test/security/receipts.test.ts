/**
 * Signed receipts: every receipt a run writes carries a signature made with a key outside the
 * sandbox (Ed25519 by default, test/security/receipt-keys.test.ts; HMAC-SHA256 here, for a single
 * host that asks for it); an edited receipt (a verdict turned to "verified") is caught by
 * `uh mission status` and `collect` and by `uh receipt verify` (exit 6, "NOT trusted"), inline
 * and when edited in Redis after a worker signed it with the fleet's shared HMAC key.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, keyFrom, signReceipt, verifyReceipt } from '../../src/operation/receipt-signature.js';
import type { Receipt } from '../../src/shared/contracts/receipt.js';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { forgeStoredArtifacts, storedArtifact } from '../support/stored-artifacts.js';

let repo: string;
const dirs: string[] = [];
beforeAll(() => {
  repo = makeRepo({ 'README.md': '# receipts\n' });
  dirs.push(repo);
});
afterAll(() => dirs.forEach(removeDir));

/** A run whose verdict is verification_failed: the check fails. */
function failingMission() {
  return writeMission(repo, ['edit', 'a.txt', 'hello'], { verification: [{ name: 'fails', argv: ['false'] }] });
}

function forge(path: string): void {
  const receipt = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  writeFileSync(path, `${JSON.stringify({ ...receipt, verdict: 'verified', exit_code: 0 }, null, 2)}\n`);
}

describe('receipt signature (unit)', () => {
  const key = keyFrom(Buffer.from('k'.repeat(40)));
  const receipt = {
    operation_id: 'x',
    verdict: 'verification_failed',
    nested: { b: 1, a: [1, { d: 2, c: 3 }] },
  } as unknown as Receipt;

  it('canonical JSON ignores key order', () => {
    expect(canonicalJson({ b: 1, a: { d: 1, c: [2, { z: 1, y: 2 }] } })).toBe(
      '{"a":{"c":[2,{"y":2,"z":1}],"d":1},"b":1}',
    );
  });

  it('verifies what it signed, whatever the key order, and refuses an edit, a strip or another key', () => {
    const signed = signReceipt(receipt, key) as unknown as Record<string, unknown>;
    expect(verifyReceipt(JSON.parse(JSON.stringify(signed)), key).state).toBe('valid');
    const reordered = Object.fromEntries(Object.entries(signed).reverse());
    expect(verifyReceipt(reordered, key).state).toBe('valid');
    expect(verifyReceipt({ ...signed, verdict: 'verified' }, key).state).toBe('invalid');
    const { signature: _s, ...stripped } = signed;
    expect(verifyReceipt(stripped, key).state).toBe('unsigned');
    expect(verifyReceipt(signed, keyFrom(Buffer.from('o'.repeat(40)))).state).toBe('unknown_key');
    expect(verifyReceipt(signed, null).state).toBe('no_key');
  });
});

describe('signed receipts, inline', () => {
  it('UH_RECEIPT_KEY_FILE asks for HMAC; status, collect and receipt verify catch a forged verdict', async () => {
    const state = tempDir('uh-rc-state-');
    const cache = tempDir('uh-rc-cache-');
    const out = tempDir('uh-rc-out-');
    dirs.push(state, cache, out);
    const env = { UH_CACHE_DIR: cache, UH_RECEIPT_KEY_FILE: join(cache, 'receipt.key') };
    const { path, operationId } = failingMission();
    const run = await runCli(['mission', 'run', path, '--json', '--state-dir', state], { cwd: repo, env });
    expect(run.code).toBe(1);
    expect(statSync(join(cache, 'receipt.key')).mode & 0o777).toBe(0o600);
    const receiptPath = join(state, 'operations', operationId, 'receipt.json');
    expect(JSON.parse(readFileSync(receiptPath, 'utf8')).signature).toMatchObject({ alg: 'hmac-sha256' });

    const ok = await runCli(['mission', 'status', operationId, '--state-dir', state], { cwd: repo, env });
    expect(ok.code).toBe(1); // the operation's own exit code
    expect(ok.stdout).toContain('✔ signature');
    const verified = await runCli(['receipt', 'verify', receiptPath, '--json'], { cwd: repo, env });
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ state: 'valid' });

    forge(receiptPath);
    const status = await runCli(['mission', 'status', operationId, '--state-dir', state], { cwd: repo, env });
    expect(status.code).toBe(6);
    expect(status.stderr).toContain('NOT trusted (invalid)');
    expect(status.stdout).not.toContain('verified'); // the forged verdict is never printed as the outcome
    const statusJson = await runCli(['mission', 'status', operationId, '--json', '--state-dir', state], {
      cwd: repo,
      env,
    });
    expect(statusJson.code).toBe(6);
    expect(JSON.parse(statusJson.stdout).signature).toMatchObject({ state: 'invalid' });
    const collect = await runCli(['mission', 'collect', operationId, '--out', out, '--state-dir', state], {
      cwd: repo,
      env,
    });
    expect(collect.code).toBe(6);
    expect(collect.stderr).toContain('NOT trusted (invalid)');
    const verify = await runCli(['receipt', 'verify', receiptPath], { cwd: repo, env });
    expect(verify.code).toBe(6);
    expect(verify.stdout).toContain('✘ invalid: content does not match the signature');
  });

  it('uh receipt verify: 2 for bad input, 6 for another key, --key names the key file', async () => {
    const cache = tempDir('uh-rc-cache-');
    dirs.push(cache);
    const file = join(cache, 'r.json');
    const keyFile = join(cache, 'k.key');
    writeFileSync(keyFile, 'a'.repeat(64));
    const signed = signReceipt(
      { operation_id: 'y', verdict: 'verified' } as unknown as Receipt,
      keyFrom(Buffer.from('a'.repeat(64))),
    );
    writeFileSync(file, JSON.stringify(signed));
    expect((await runCli(['receipt', 'verify', file, '--key', keyFile], { cwd: repo })).code).toBe(0);
    expect(
      (await runCli(['receipt', 'verify', file], { cwd: repo, env: { UH_RECEIPT_KEY: 'b'.repeat(40) } })).code,
    ).toBe(6);
    expect((await runCli(['receipt', 'verify', join(cache, 'missing.json')], { cwd: repo })).code).toBe(2);
    writeFileSync(join(cache, 'bad.json'), '{oops');
    expect((await runCli(['receipt', 'verify', join(cache, 'bad.json')], { cwd: repo })).code).toBe(2);
    const noKey = await runCli(['receipt', 'verify', file], { cwd: repo, env: { UH_CACHE_DIR: join(cache, 'empty') } });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('--public-key');
    expect((await runCli(['receipt', 'verify', file], { cwd: repo, env: { UH_RECEIPT_KEY: 'short' } })).code).toBe(2);
  });
});

describe('signed receipts, queue mode', () => {
  let redis: TestRedis;
  let worker: WorkerProcess;
  let env: Record<string, string>;
  const FLEET_KEY = 'fleet-receipt-key-0123456789abcdef0123';

  beforeAll(async () => {
    redis = await startTestRedis('receipts');
    const workerCache = tempDir('uh-rc-wcache-');
    dirs.push(workerCache);
    env = {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: redis.prefix('q'),
      UH_RECEIPT_KEY: FLEET_KEY,
      UH_ALLOW_LOCAL_REPOS: '1',
      // The fleet's artifact store, shared by the worker and producer hosts.
      UH_ARTIFACT_STORE: `dir:${workerCache}/shared-artifacts`,
    };
    const workerState = tempDir('uh-rc-wstate-');
    dirs.push(workerState);
    worker = await startWorker(['--runtime', 'command', '--state-dir', workerState], {
      cwd: repo,
      env: { ...env, UH_CACHE_DIR: workerCache },
    });
  });
  afterAll(async () => {
    await worker?.stop('SIGTERM');
    await redis?.cleanup();
  });

  it('a worker signs with the fleet key; a receipt edited in Redis fails on status and collect', async () => {
    const producerCache = tempDir('uh-rc-pcache-');
    const out = tempDir('uh-rc-out-');
    dirs.push(producerCache, out);
    const producer = { ...env, UH_CACHE_DIR: producerCache };
    const { path, operationId } = failingMission();
    const waited = await runCli(['mission', 'submit', path, '--wait', '--json', '--state-dir', tempDir('uh-rc-ps-')], {
      cwd: repo,
      env: producer,
    });
    expect(waited.code, waited.stderr).toBe(1);
    const good = await runCli(['mission', 'status', operationId, '--redis', redis.url], { cwd: repo, env: producer });
    expect(good.code).toBe(1);
    expect(good.stdout).toContain('✔ signature');

    const text = await storedArtifact(redis.redis, producer, operationId, 'receipt');
    expect(text).toBeTruthy();
    const forged = { ...(JSON.parse(text as string) as Record<string, unknown>), verdict: 'verified', exit_code: 0 };
    await forgeStoredArtifacts(redis.redis, producer, operationId, { receipt: JSON.stringify(forged) });
    const status = await runCli(['mission', 'status', operationId, '--redis', redis.url], { cwd: repo, env: producer });
    expect(status.code).toBe(6);
    expect(status.stderr).toContain('NOT trusted (invalid)');
    const collect = await runCli(['mission', 'collect', operationId, '--out', out, '--redis', redis.url], {
      cwd: repo,
      env: producer,
    });
    expect(collect.code).toBe(6);
    const verify = await runCli(['receipt', 'verify', join(out, 'receipt.json')], { cwd: repo, env: producer });
    expect(verify.code).toBe(6);
  });
});
