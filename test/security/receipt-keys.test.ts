/**
 * A fleet key CI can check (issue 28): receipts signed with Ed25519, verified anywhere with the
 * public key alone.
 * - A fresh host makes its own key pair (0600) on first signing; `uh receipt key --public` prints
 *   the public half, whose key id is the one in the receipt.
 * - "Host A" runs a mission with the fleet's private key; a "CI step" (no uh config, no cache,
 *   not a checkout) verifies the receipt with `uh receipt verify --public-key` and nothing else,
 *   and refuses a forged, an unsigned and another key's receipt (exit 6, with the reason).
 *   openssl checks the same signature: it is plain Ed25519 over the canonical JSON.
 * - Every consumer refuses a forged or unsigned receipt (a table): `receipt verify`, `mission
 *   status`, `collect`, `watch`, `submit --wait` (inline and queue mode) and the API's signature
 *   state; none prints "✔" or the forged verdict first.
 * - Workers publish the id of the key they sign with; `uh doctor --redis` warns when they differ.
 * - An agent under bubblewrap cannot read the signing key where uh keeps it (the cache dir) or the
 *   deploy files mount it (the state dir); without isolation (the control) it can.
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPair, publicKeyId, readPublicKeys } from '../../src/operation/receipt-keys.js';
import { canonicalJson, signReceipt } from '../../src/operation/receipt-signature.js';
import { receiptTrust } from '../../src/operation/receipt-trust.js';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { loadConfig } from '../../src/shared/config.js';
import type { Receipt } from '../../src/shared/contracts/receipt.js';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { hostileMission, requireBwrap } from './isolation-helpers.js';
import { forgeStoredArtifacts, storedArtifact } from '../support/stored-artifacts.js';

let repo: string;
const dirs: string[] = [];
const temp = (prefix: string) => {
  const dir = tempDir(prefix);
  dirs.push(dir);
  return dir;
};
beforeAll(() => {
  repo = makeRepo({ 'README.md': '# receipt keys\n' });
  dirs.push(repo);
});
afterAll(() => dirs.forEach(removeDir));

/** A run whose checks fail: verdict verification_failed, exit 1. Forging makes it "verified". */
const failingMission = () =>
  writeMission(repo, ['edit', 'a.txt', 'hello'], { verification: [{ name: 'fails', argv: ['false'] }] });

type Variant = 'valid' | 'forged' | 'unsigned' | 'other_key';

/** The receipt text of each variant, from the worker's real one. */
function variant(text: string, kind: Variant, otherKeyDir: string): string {
  const receipt = JSON.parse(text) as Record<string, unknown>;
  if (kind === 'valid') return text;
  if (kind === 'forged') return JSON.stringify({ ...receipt, verdict: 'verified', exit_code: 0 }); // the signature kept
  const { signature: _s, ...unsigned } = receipt;
  const body = { ...unsigned, verdict: 'verified', exit_code: 0 };
  if (kind === 'unsigned') return JSON.stringify(body);
  const other = generateKeyPair(otherKeyDir).key;
  return JSON.stringify(signReceipt(body as unknown as Receipt, other)); // a real signature, by a key nobody trusts
}

const EXPECTED: Record<Variant, { state: string; reason: RegExp }> = {
  valid: { state: 'valid', reason: /signed by key/ },
  forged: { state: 'invalid', reason: /edited after signing/ },
  unsigned: { state: 'unsigned', reason: /unsigned/ },
  other_key: { state: 'unknown_key', reason: /not in this keyring/ },
};

/** An environment with no uh configuration at all: no UH_* or REDIS_* variable, an empty home. */
function bareEnv(): Record<string, string | undefined> {
  const home = temp('uh-ci-home-');
  const env: Record<string, string | undefined> = {
    HOME: home,
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_CONFIG_HOME: join(home, '.config'),
  };
  for (const name of Object.keys(process.env)) if (/^(UH_|REDIS_)/.test(name)) env[name] = undefined;
  return env;
}

describe('Ed25519 receipt keys (unit)', () => {
  it('signs, verifies with the public key alone, accepts several keys (rotation), refuses edits and strangers', () => {
    const a = generateKeyPair(temp('uh-k-a-')).key;
    const b = generateKeyPair(temp('uh-k-b-')).key;
    const receipt = {
      operation_id: 'x',
      verdict: 'verification_failed',
      nested: { b: 1, a: [1, { d: 2 }] },
    } as unknown as Receipt;
    const signed = signReceipt(receipt, a) as unknown as Record<string, unknown>;
    expect(signed.signature).toMatchObject({ alg: 'ed25519', key_id: a.id });
    const onlyPublic = { publicKeys: new Map([[a.id, a.publicKey]]), secrets: new Map() };
    const rotated = {
      publicKeys: new Map([
        [a.id, a.publicKey],
        [b.id, b.publicKey],
      ]),
      secrets: new Map(),
    };
    expect(receiptTrust(JSON.parse(JSON.stringify(signed)), onlyPublic).state).toBe('valid');
    expect(receiptTrust(Object.fromEntries(Object.entries(signed).reverse()), rotated).state).toBe('valid');
    expect(receiptTrust(signReceipt(receipt, b), rotated).state).toBe('valid');
    expect(receiptTrust({ ...signed, verdict: 'verified' }, rotated)).toMatchObject({ state: 'invalid', key_id: a.id });
    const { signature: _s, ...stripped } = signed;
    expect(receiptTrust(stripped, rotated)).toMatchObject({ state: 'unsigned', key_id: null });
    expect(receiptTrust(signReceipt(receipt, b), onlyPublic)).toMatchObject({ state: 'unknown_key', key_id: b.id });
    expect(receiptTrust(signed, null).state).toBe('unknown_key'); // no key at all is never "valid"
    const swapped = { ...signed, signature: { ...(signed.signature as object), key_id: b.id } };
    expect(receiptTrust(swapped, rotated).state).toBe('invalid'); // A's signature claimed for B
  });

  it('key id = first 16 hex of sha256(SPKI DER), the signature is plain Ed25519 over the canonical JSON (openssl agrees)', () => {
    const dir = temp('uh-k-ossl-');
    const { key, publicFile } = generateKeyPair(dir);
    expect(statSync(join(dir, 'receipt-signing.pem')).mode & 0o777).toBe(0o600);
    const der = execFileSync('openssl', ['pkey', '-pubin', '-in', publicFile, '-outform', 'DER']);
    expect(key.id).toBe(execFileSync('sha256sum', [], { input: der }).toString().slice(0, 16));
    expect(publicKeyId([...readPublicKeys([publicFile]).values()][0] as never)).toBe(key.id);
    const signed = signReceipt(
      { operation_id: 'o', verdict: 'verified' } as unknown as Receipt,
      key,
    ) as unknown as Record<string, unknown>;
    const { signature, ...body } = signed;
    writeFileSync(join(dir, 'body'), canonicalJson(body));
    writeFileSync(join(dir, 'sig'), Buffer.from((signature as { value: string }).value, 'hex'));
    const ok = execFileSync('openssl', [
      'pkeyutl',
      '-verify',
      '-pubin',
      '-inkey',
      publicFile,
      '-rawin',
      '-in',
      join(dir, 'body'),
      '-sigfile',
      join(dir, 'sig'),
    ]);
    expect(ok.toString()).toContain('Signature Verified Successfully');
  });

  it('UH_RECEIPT_PUBLIC_KEYS: an unreadable or non-Ed25519 key is an error naming the variable', () => {
    const dir = temp('uh-k-bad-');
    writeFileSync(join(dir, 'x.pub'), 'not a key');
    expect(() => readPublicKeys([join(dir, 'x.pub')])).toThrow(/UH_RECEIPT_PUBLIC_KEYS .*no PEM public key/);
    expect(() => readPublicKeys([join(dir, 'missing.pub')])).toThrow(/no such file/);
  });
});

describe('a fresh single host', () => {
  it('makes an Ed25519 pair 0600 on first signing; uh receipt key --public prints it; the receipt verifies elsewhere with it', async () => {
    const cache = temp('uh-rk-cache-');
    const state = temp('uh-rk-state-');
    const env = { UH_CACHE_DIR: cache };
    const { path, operationId } = failingMission();
    const before = await runCli(['receipt', 'key', '--public'], { cwd: repo, env });
    expect(before.code).toBe(2); // no key yet: it is made by the first signature, not by asking for it
    expect(before.stderr).toContain('no receipt signing key here yet');
    expect(existsSync(join(cache, 'receipt-signing.pem'))).toBe(false);
    const run = await runCli(['mission', 'run', path, '--json', '--state-dir', state], { cwd: repo, env });
    expect(run.code, run.stderr).toBe(1);
    expect(statSync(join(cache, 'receipt-signing.pem')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(cache, 'receipt.key'))).toBe(false); // HMAC is not the default
    const receiptPath = join(state, 'operations', operationId, 'receipt.json');
    const signature = JSON.parse(readFileSync(receiptPath, 'utf8')).signature;
    expect(signature).toMatchObject({ alg: 'ed25519' });

    const pub = await runCli(['receipt', 'key', '--public'], { cwd: repo, env });
    expect(pub.code, pub.stderr).toBe(0);
    expect(pub.stdout).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+-----END PUBLIC KEY-----\n$/);
    expect(pub.stdout).toBe(readFileSync(join(cache, 'receipt-signing.pub'), 'utf8'));
    expect(pub.stderr).toContain(`key id ${signature.key_id}`);
    const ci = temp('uh-rk-ci-');
    writeFileSync(join(ci, 'host.pub'), pub.stdout);
    copyFileSync(receiptPath, join(ci, 'receipt.json'));
    const verify = await runCli(['receipt', 'verify', 'receipt.json', '--public-key', 'host.pub', '--json'], {
      cwd: ci,
      env: bareEnv(),
    });
    expect(verify.code, verify.stderr).toBe(0);
    expect(JSON.parse(verify.stdout)).toMatchObject({ state: 'valid', key_id: signature.key_id });
  });

  it('uh receipt key --generate makes a pair and never replaces one', async () => {
    const dir = join(temp('uh-rk-gen-'), 'fleet');
    const made = await runCli(['receipt', 'key', '--generate', dir, '--json'], { cwd: repo, env: bareEnv() });
    expect(made.code, made.stderr).toBe(0);
    const out = JSON.parse(made.stdout) as { key_id: string; private_key_file: string; public_key_file: string };
    expect(statSync(out.private_key_file).mode & 0o777).toBe(0o600);
    expect(readFileSync(out.public_key_file, 'utf8')).toContain('BEGIN PUBLIC KEY');
    expect(readFileSync(out.public_key_file, 'utf8')).not.toContain('PRIVATE');
    const again = await runCli(['receipt', 'key', '--generate', dir], { cwd: repo, env: bareEnv() });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('never replaces a key');
    expect(readFileSync(out.private_key_file, 'utf8')).toContain('PRIVATE KEY');
  });
});

describe('a worker whose fleet key is missing or not a key', () => {
  it.each([
    [
      'a placeholder (the k8s manifest before it is filled in)',
      'REPLACE with fleet-key/receipt-signing.pem\n',
      'is not a PEM private key',
    ],
    ['no such file', null, 'no such file'],
  ])(
    '%s: exit 2 at start, before it takes a job',
    async (_what, content, message) => {
      const dir = temp('uh-rk-badkey-');
      const file = join(dir, 'receipt-signing.pem');
      if (content !== null) writeFileSync(file, content);
      const env = { UH_CACHE_DIR: dir, UH_RECEIPT_SIGNING_KEY_FILE: file, REDIS_URL: 'redis://127.0.0.1:1' }; // never reached
      const got = await runCli(['worker', 'start', '--runtime', 'command', '--state-dir', join(dir, 'state')], {
        cwd: repo,
        env,
      });
      expect(got.code, got.stderr).toBe(2);
      expect(got.stderr).toContain(message);
      expect(got.stderr).not.toContain('REPLACE'); // the file's content is never echoed
    },
    30_000,
  );
});

describe('host A signs with the fleet key; a CI step with only the public key verifies', () => {
  let fleet: string;
  let receiptText: string;
  let hostA: { env: Record<string, string>; state: string; operationId: string };

  beforeAll(async () => {
    fleet = join(temp('uh-rk-fleet-'), 'keys');
    generateKeyPair(fleet);
    const env = {
      UH_CACHE_DIR: temp('uh-rk-a-cache-'),
      UH_RECEIPT_SIGNING_KEY_FILE: join(fleet, 'receipt-signing.pem'),
    };
    const state = temp('uh-rk-a-state-');
    const { path, operationId } = failingMission();
    const run = await runCli(['mission', 'run', path, '--state-dir', state], { cwd: repo, env });
    expect(run.code, run.stderr).toBe(1);
    receiptText = readFileSync(join(state, 'operations', operationId, 'receipt.json'), 'utf8');
    hostA = { env, state, operationId };
  }, 60_000);

  it.each(['valid', 'forged', 'unsigned', 'other_key'] as const)(
    'uh receipt verify --public-key in a bare CI env: %s',
    async (kind) => {
      const ci = temp('uh-rk-ci-');
      copyFileSync(join(fleet, 'receipt-signing.pub'), join(ci, 'fleet.pub'));
      writeFileSync(join(ci, 'receipt.json'), variant(receiptText, kind, join(ci, 'other')));
      const got = await runCli(['receipt', 'verify', 'receipt.json', '--public-key', 'fleet.pub'], {
        cwd: ci,
        env: bareEnv(),
      });
      expect(got.code, got.stderr).toBe(kind === 'valid' ? 0 : 6);
      expect(got.stdout).toContain(`${EXPECTED[kind].state}: `);
      expect(got.stdout).toMatch(EXPECTED[kind].reason);
      const json = await runCli(['receipt', 'verify', 'receipt.json', '--public-key', 'fleet.pub', '--json'], {
        cwd: ci,
        env: bareEnv(),
      });
      expect(JSON.parse(json.stdout)).toMatchObject({ state: EXPECTED[kind].state });
    },
  );

  it('rotation: --public-key a directory of *.pub accepts the old and the new key; no key at all is exit 2', async () => {
    const ci = temp('uh-rk-rot-');
    mkdirSync(join(ci, 'keys'));
    copyFileSync(join(fleet, 'receipt-signing.pub'), join(ci, 'keys', 'old.pub'));
    const next = generateKeyPair(join(ci, 'next'));
    copyFileSync(next.publicFile, join(ci, 'keys', 'new.pub'));
    writeFileSync(join(ci, 'old.json'), receiptText);
    writeFileSync(join(ci, 'new.json'), JSON.stringify(signReceipt(JSON.parse(receiptText) as Receipt, next.key)));
    for (const file of ['old.json', 'new.json']) {
      expect(
        (await runCli(['receipt', 'verify', file, '--public-key', 'keys'], { cwd: ci, env: bareEnv() })).code,
      ).toBe(0);
    }
    const none = await runCli(['receipt', 'verify', 'old.json'], { cwd: ci, env: bareEnv() });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--public-key');
  });

  it.each(['valid', 'forged', 'unsigned', 'other_key'] as const)(
    'mission status and collect on host A: %s',
    async (kind) => {
      const state = temp('uh-rk-copy-');
      cpSync(hostA.state, state, { recursive: true });
      const file = join(state, 'operations', hostA.operationId, 'receipt.json');
      writeFileSync(file, variant(receiptText, kind, temp('uh-rk-other-')));
      const status = await runCli(['mission', 'status', hostA.operationId, '--state-dir', state], {
        cwd: repo,
        env: hostA.env,
      });
      const collect = await runCli(
        ['mission', 'collect', hostA.operationId, '--out', temp('uh-rk-out-'), '--state-dir', state],
        { cwd: repo, env: hostA.env },
      );
      const json = await runCli(['mission', 'status', hostA.operationId, '--json', '--state-dir', state], {
        cwd: repo,
        env: hostA.env,
      });
      const shown = JSON.parse(json.stdout) as { receipt: { verdict: string } | null; signature: { state: string } };
      expect(shown.signature.state).toBe(EXPECTED[kind].state);
      if (kind === 'valid') {
        expect(status.code).toBe(1); // the operation's own code: its checks failed
        expect(status.stdout).toMatch(/verification_failed[\s\S]*✔ signature/);
        expect(collect.code).toBe(0);
        expect(shown.receipt?.verdict).toBe('verification_failed');
        return;
      }
      for (const got of [status, collect, json]) expect(got.code, got.stderr).toBe(6);
      expect(status.stderr).toMatch(EXPECTED[kind].reason);
      expect(status.stdout).not.toContain('✔'); // never "verified" before the refusal
      expect(status.stdout).not.toContain('verified');
      expect(shown.receipt).toBeNull(); // the forged claims only under untrusted_receipt
      expect(collect.stderr).toContain('NOT trusted');
    },
  );
});

describe('queue mode: every consumer refuses a forged or unsigned receipt (table)', () => {
  let redis: TestRedis;
  let worker: WorkerProcess;
  let fleet: string;
  let producer: Record<string, string>;
  let mission: { path: string; operationId: string };
  let receiptText: string;
  let client: QueueClient;
  let api: Awaited<ReturnType<typeof buildApiServer>>;

  beforeAll(async () => {
    redis = await startTestRedis('receipt-keys');
    fleet = join(temp('uh-rq-fleet-'), 'keys');
    generateKeyPair(fleet);
    const prefix = redis.prefix('q');
    // The fleet's artifact store, shared by the worker and producer hosts.
    const queue = {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: prefix,
      UH_ALLOW_LOCAL_REPOS: '1',
      UH_ARTIFACT_STORE: `dir:${temp('uh-rq-store-')}`,
    };
    worker = await startWorker(['--runtime', 'command', '--state-dir', temp('uh-rq-wstate-')], {
      cwd: repo,
      env: {
        ...queue,
        UH_CACHE_DIR: temp('uh-rq-wcache-'),
        UH_RECEIPT_SIGNING_KEY_FILE: join(fleet, 'receipt-signing.pem'),
      },
    });
    // The producer holds the public key only.
    producer = {
      ...queue,
      UH_CACHE_DIR: temp('uh-rq-pcache-'),
      UH_RECEIPT_PUBLIC_KEYS: join(fleet, 'receipt-signing.pub'),
    };
    mission = failingMission();
    const waited = await runCli(['mission', 'submit', mission.path, '--wait', '--state-dir', temp('uh-rq-ps-')], {
      cwd: repo,
      env: producer,
    });
    expect(waited.code, waited.stderr).toBe(1);
    expect(waited.stdout).toContain('✔ signature');
    receiptText = (await storedArtifact(redis.redis, producer, mission.operationId, 'receipt')) as string;
    const config = loadConfig(producer);
    client = await QueueClient.open(config.queue, redis.url);
    api = await buildApiServer({
      client,
      config: readApiConfig({ UH_API_TOKEN: 'receipt-keys-token-0123456789abcdef' }, '127.0.0.1'),
      stateDir: temp('uh-rq-api-'),
      cacheDir: temp('uh-rq-apic-'),
      baseDir: repo,
      repositoryPolicy: { allowLocal: true, allowHttp: false },
      prices: {},
      receiptKey: config.receipts,
      promotionIdentity: {
        author: { name: 'T', email: 't@localhost' },
        committer: { name: 'T', email: 't@localhost' },
      },
    });
  }, 90_000);
  afterAll(async () => {
    await api?.close();
    await client?.close();
    await worker?.stop('SIGTERM');
    await redis?.cleanup();
  });

  const auth = { authorization: 'Bearer receipt-keys-token-0123456789abcdef' };

  it('GET /v1/receipt-key serves the fleet public key and its id', async () => {
    const res = await api.inject({ method: 'GET', url: '/v1/receipt-key', headers: auth });
    const [only] = (res.json() as { keys: Array<{ key_id: string; public_key: string }> }).keys;
    expect(only?.public_key).toBe(readFileSync(join(fleet, 'receipt-signing.pub'), 'utf8'));
    expect(only?.key_id).toBe(JSON.parse(receiptText).signature.key_id);
    expect(res.body).not.toContain('PRIVATE');
  });

  it('workers publish their key id; uh doctor --redis warns when live workers sign with different keys', async () => {
    const prefix = producer.UH_REDIS_PREFIX as string;
    const fleetId = JSON.parse(receiptText).signature.key_id as string;
    const [beatKey] = await redis.redis.keys(`{${prefix}}:worker:*`);
    const beat = JSON.parse((await redis.redis.get(beatKey as string)) as string) as Record<string, unknown>;
    expect(beat.receipt_key_id).toBe(fleetId);
    type Doctor = { findings: Array<{ what: string; ok: boolean; detail: string }> };
    const doctor = async () =>
      (
        JSON.parse(
          (await runCli(['doctor', '--redis', redis.url, '--json'], { cwd: repo, env: producer })).stdout,
        ) as Doctor
      ).findings;
    expect((await doctor()).find((f) => f.what === 'fleet receipt key')).toMatchObject({
      ok: true,
      detail: expect.stringContaining(fleetId),
    });
    // A second live worker that signs with its own key (its heartbeat, as that worker writes it).
    const rogue = `{${prefix}}:worker:rogue-host-1`;
    await redis.redis.set(
      rogue,
      JSON.stringify({ ...beat, id: 'rogue-host-1', receipt_key_id: '0123456789abcdef', at: new Date().toISOString() }),
      'PX',
      60_000,
    );
    try {
      const findings = await doctor();
      expect(findings.find((f) => f.what === 'fleet receipt key')).toMatchObject({
        ok: false,
        detail: expect.stringMatching(/2 different keys.*rogue-host-1/),
      });
      expect(findings.find((f) => f.what === 'fleet receipts here')).toMatchObject({
        ok: false,
        detail: expect.stringContaining('0123456789abcdef'),
      });
      expect(findings.find((f) => f.what === 'receipt verification')).toMatchObject({
        ok: true,
        detail: expect.stringContaining(fleetId),
      });
    } finally {
      await redis.redis.del(rogue);
    }
  }, 60_000);

  it.each(['valid', 'forged', 'unsigned', 'other_key'] as const)(
    '%s receipt in Redis (the record forged to finished/verified/0)',
    async (kind) => {
      await forgeStoredArtifacts(redis.redis, producer, mission.operationId, {
        receipt: variant(receiptText, kind, temp('uh-rq-other-')),
      });
      const opKey = `{${producer.UH_REDIS_PREFIX}}:op:${mission.operationId}`;
      await redis.redis.hset(opKey, 'verdict', 'verified', 'exit_code', '0'); // what an agent reaching Redis writes
      const run = (args: string[]) => runCli(args, { cwd: repo, env: producer });
      const id = mission.operationId;
      const results = {
        status: await run(['mission', 'status', id, '--redis', redis.url]),
        collect: await run(['mission', 'collect', id, '--out', temp('uh-rq-out-'), '--redis', redis.url]),
        watch: await run(['mission', 'watch', id, '--redis', redis.url]),
        'submit --wait': await run(['mission', 'submit', mission.path, '--wait', '--state-dir', temp('uh-rq-ps-')]),
      };
      const view = await api.inject({ method: 'GET', url: `/v1/operations/${id}`, headers: auth });
      expect(view.json().signature).toMatchObject({ state: EXPECTED[kind].state });
      const raw = await api.inject({ method: 'GET', url: `/v1/operations/${id}/receipt`, headers: auth });
      expect(raw.headers['x-uh-signature-state']).toBe(EXPECTED[kind].state);
      for (const [name, got] of Object.entries(results)) {
        if (kind === 'valid') {
          expect(got.code, `${name}: ${got.stderr}`).toBe(name === 'collect' ? 0 : 1); // the receipt's code, not the record's
          continue;
        }
        expect(got.code, `${name}: ${got.stdout}${got.stderr}`).toBe(6);
        expect(got.stderr, name).toMatch(EXPECTED[kind].reason);
        expect(got.stdout, name).not.toContain('✔');
        expect(got.stdout, name).not.toMatch(/\bverified\b/);
      }
    },
    60_000,
  );
});

describe("the signing key is out of every agent's reach (bubblewrap masks the state and cache dirs)", () => {
  // Outside /tmp on purpose: the sandbox's private /tmp would hide them anyway; here only the masks can.
  const outsideTmp = (prefix: string) => {
    const dir = mkdtempSync(join('/var/tmp', prefix));
    dirs.push(dir);
    return dir;
  };
  /** The agent tries each key file; a line per key it could read lands in the diff. */
  const STEAL =
    'for f in "$K_DEFAULT" "$K_FLEET" "$K_LOOSE"; do grep -q "PRIVATE KEY" "$f" 2>/dev/null && echo "read $f" >> stolen.txt; done; echo done > result.txt';

  it.each([
    ['auto', ['loose']],
    ['off', ['default', 'fleet', 'loose']], // the control: without isolation the same agent reads them all
  ] as const)(
    'UH_ISOLATION=%s: the agent reads only %j',
    async (isolation, readable) => {
      requireBwrap();
      const cache = outsideTmp('uh-rk-iso-cache-');
      const state = outsideTmp('uh-rk-iso-state-');
      const loose = outsideTmp('uh-rk-iso-loose-');
      generateKeyPair(join(cache, 'default-pair')); // the shape of the default <cache>/receipt-signing.pem
      const fleet = generateKeyPair(join(state, 'receipt-key')); // where the deploy files mount the fleet key
      const stray = generateKeyPair(loose); // a key left elsewhere: uh doctor warns about it
      const keys = {
        default: join(cache, 'default-pair', 'receipt-signing.pem'),
        fleet: fleet.privateFile,
        loose: stray.privateFile,
      };
      const { path, operationId } = hostileMission(repo, STEAL, {
        sandbox: { env: { K_DEFAULT: keys.default, K_FLEET: keys.fleet, K_LOOSE: keys.loose } },
      });
      const env = { UH_CACHE_DIR: cache, UH_ISOLATION: isolation, UH_RECEIPT_SIGNING_KEY_FILE: fleet.privateFile };
      const run = await runCli(['mission', 'run', path, '--json', '--state-dir', state], { cwd: repo, env });
      expect(run.code, run.stderr).toBe(0);
      const diff = readFileSync(join(state, 'operations', operationId, 'diff.patch'), 'utf8');
      const stolen = Object.entries(keys)
        .filter(([, file]) => diff.includes(`+read ${file}`))
        .map(([name]) => name);
      expect(stolen).toEqual(readable);
      expect(JSON.parse(run.stdout).signature).toMatchObject({ alg: 'ed25519', key_id: fleet.key.id });
    },
    60_000,
  );
});
