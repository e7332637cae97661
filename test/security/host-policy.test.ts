/**
 * Host policy beats the mission (docs/security.md "Host policy"). A hostile agent that can reach
 * Redis or the API submits a mission asking for `sandbox.isolation: off` or
 * `sandbox.env_passthrough: ["UH_*"]`, to read the worker's signing key from its environment or
 * from /proc. Producers refuse such a mission (exit 2, HTTP 400, the field named, nothing
 * enqueued); a job forged straight into Redis (record and BullMQ job written by the test, past
 * every producer check) is refused by the worker before anything runs; and
 * where the host does allow an unisolated run, the worker's own secrets are scrubbed from what
 * the agent prints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { loadMissionFile } from '../../src/shared/contracts/load-mission.js';
import type { Receipt } from '../../src/shared/contracts/receipt.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { readReceiptFromStore } from '../../src/producers/queue/materialize.js';
import type { Mission } from '../../src/shared/contracts/mission.js';
import { jobIdFor } from '../../src/shared/queue/topology.js';
import { contractDigestOf, prepareOperation } from '../../src/operation/prepare-operation.js';
import { OPERATION_PORTS } from '../../src/workers/operation-ports.js';
import { runCli, UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { hostileMission, requireBwrap } from './isolation-helpers.js';

const KEY = 'host-policy-receipt-key-5f0c3a9e71d24b68';
const API_TOKEN = 'host-policy-api-token-0d93c2b7a1e4f586';
const SECRETS = [KEY, API_TOKEN];
const ALLOWED = 'allowed-value-7c1e9d24';
const WITHHELD = 'withheld-value-3b8f60a5';

/**
 * Print the environment of this process and of each ancestor (the worker, when nothing isolates
 * the agent: /proc/<pid>/environ), and leave a mark outside the sandbox in $MARK_DIR.
 */
const READ_ANCESTORS = [
  'env',
  'p=$$; while [ "$p" -gt 1 ] 2>/dev/null; do tr "\\0" "\\n" < /proc/$p/environ 2>/dev/null | grep -E "^UH_(RECEIPT_KEY|API_TOKEN)="; p=$(awk "/^PPid:/{print \\$2}" /proc/$p/status 2>/dev/null); done',
  'touch "$MARK_DIR/agent-ran" 2>/dev/null',
  'echo touched > hostile.txt',
].join('\n');

let repo: string;
const dirs: string[] = [];
const dir = (prefix: string) => {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
};

beforeAll(() => {
  requireBwrap();
  repo = makeRepo({ 'README.md': '# policy\n' });
  dirs.push(repo);
});
afterAll(() => dirs.forEach(removeDir));

/** Every file under `root` that holds one of `secrets`. */
function leaksUnder(root: string, secrets: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else if (st.isFile())
        for (const s of secrets) if (readFileSync(path).includes(Buffer.from(s))) found.push(`${path}: ${s}`);
    }
  };
  if (existsSync(root)) walk(root);
  return found;
}
const leaksIn = (text: string, secrets: readonly string[]) => secrets.filter((s) => text.includes(s));

describe('producers refuse what the host does not allow (nothing written)', () => {
  let redis: TestRedis;
  let env: Record<string, string>;

  beforeAll(async () => {
    redis = await startTestRedis('hostpolicy-p');
    env = {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: redis.prefix('p'),
      UH_CACHE_DIR: dir('uh-hp-pcache-'),
      UH_ENV_PASSTHROUGH_ALLOW: 'UH_*,ALLOWED_VAR',
    };
  });
  afterAll(async () => redis?.cleanup());

  /** Keys of the operation under the test prefix: none when nothing was enqueued. */
  const keysOf = async (id: string) =>
    (await redis.redis.keys(`*${env.UH_REDIS_PREFIX}*`)).filter((k) => k.includes(id));

  it('mission submit and mission run: env_passthrough [UH_*] is exit 2 naming the field, even where the allowlist says UH_*', async () => {
    const { path, operationId } = hostileMission(repo, READ_ANCESTORS, {
      sandbox: { env_passthrough: ['ALLOWED_VAR', 'UH_*'] },
    });
    const submitted = await runCli(['mission', 'submit', path, '--state-dir', dir('uh-hp-ps-')], { cwd: repo, env });
    expect(submitted.code, submitted.stderr).toBe(2);
    expect(submitted.stderr).toContain('sandbox.env_passthrough[1]');
    expect(submitted.stderr).toContain('"UH_*" reaches UH_*, which never passes to an agent');
    expect(await keysOf(operationId)).toEqual([]);
    const state = dir('uh-hp-rs-');
    const ran = await runCli(['mission', 'run', path, '--state-dir', state], {
      cwd: repo,
      env: { ...env, UH_RECEIPT_KEY: KEY },
    });
    expect(ran.code, ran.stderr).toBe(2);
    expect(ran.stderr).toContain('sandbox.env_passthrough[1]');
    expect(existsSync(join(state, 'operations', operationId))).toBe(false);
  });

  it('a name outside UH_ENV_PASSTHROUGH_ALLOW, and sandbox.isolation: off under UH_ISOLATION=require, are exit 2 naming field and config', async () => {
    const outside = hostileMission(repo, READ_ANCESTORS, { sandbox: { env_passthrough: ['WITHHELD_VAR'] } });
    const refused = await runCli(['mission', 'submit', outside.path, '--state-dir', dir('uh-hp-ps-')], {
      cwd: repo,
      env,
    });
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(
      'sandbox.env_passthrough[0]: "WITHHELD_VAR" is not allowed on this host (UH_ENV_PASSTHROUGH_ALLOW allows UH_*,ALLOWED_VAR)',
    );
    const off = hostileMission(repo, READ_ANCESTORS, { sandbox: { isolation: 'off' } });
    const strict = { ...env, UH_ISOLATION: 'require', UH_ALLOW_MISSION_ISOLATION_OFF: '1' };
    const lowered = await runCli(['mission', 'submit', off.path, '--state-dir', dir('uh-hp-ps-')], {
      cwd: repo,
      env: strict,
    });
    expect(lowered.code, lowered.stderr).toBe(2);
    expect(lowered.stderr).toContain(
      'sandbox.isolation: off is refused: this host requires isolation (UH_ISOLATION=require)',
    );
    const unallowed = await runCli(['mission', 'submit', off.path, '--state-dir', dir('uh-hp-ps-')], {
      cwd: repo,
      env,
    });
    expect(unallowed.code, unallowed.stderr).toBe(2);
    expect(unallowed.stderr).toContain('UH_ALLOW_MISSION_ISOLATION_OFF is not set');
    expect(await keysOf(outside.operationId)).toEqual([]);
    expect(await keysOf(off.operationId)).toEqual([]);
  });

  it('the HTTP API answers 400 naming the field, and enqueues nothing', async () => {
    const api: ChildProcess = spawn(
      process.execPath,
      [UH_BIN, 'api', 'start', '--port', '0', '--state-dir', dir('uh-hp-api-')],
      {
        cwd: repo,
        env: { ...process.env, ...env, UH_LOG_LEVEL: 'silent', UH_API_TOKEN: API_TOKEN, UH_ALLOW_LOCAL_REPOS: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const base = await new Promise<string>((resolve, reject) => {
        let out = '';
        api.stdout?.on('data', (c) => {
          out += c;
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m) resolve(m[1] as string);
        });
        api.on('close', (code) => reject(new Error(`api exited ${code}: ${out}`)));
      });
      const { path, operationId } = hostileMission(repo, READ_ANCESTORS, {
        sandbox: { env_passthrough: ['UH_RECEIPT_KEY'] },
      });
      const body = JSON.stringify(loadMissionFile(path));
      const res = await fetch(`${base}/v1/missions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_TOKEN}`, 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(400);
      const answer = (await res.json()) as { error: { kind: string; details: string[] } };
      expect(answer.error.kind).toBe('invalid_input');
      expect(answer.error.details).toEqual([
        expect.stringMatching(/^sandbox\.env_passthrough\[0\]: "UH_RECEIPT_KEY" reaches UH_\*/),
      ]);
      expect(await keysOf(operationId)).toEqual([]);
    } finally {
      api.kill('SIGTERM');
    }
  });
});

describe('a worker applies its policy to the job it receives (forged straight into Redis)', () => {
  let redis: TestRedis;
  let worker: WorkerProcess;
  let client: QueueClient;
  let workerState: string;
  let markDir: string;
  let prefix: string;

  beforeAll(async () => {
    redis = await startTestRedis('hostpolicy-w');
    prefix = redis.prefix('w');
    const cache = dir('uh-hp-wcache-');
    workerState = dir('uh-hp-wstate-');
    // Not under /tmp: the agent's /tmp is private under bwrap, so the mark would be lost there.
    markDir = tempDir('uh-hp-mark-');
    dirs.push(markDir);
    const env = { REDIS_URL: redis.url, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cache, UH_ALLOW_LOCAL_REPOS: '1' };
    worker = await startWorker(['--runtime', 'command', '--state-dir', workerState], {
      cwd: repo,
      env: {
        ...env,
        UH_LOG_LEVEL: 'info',
        UH_ISOLATION: 'require',
        // Neither can widen what `require` and NEVER_PASSED forbid.
        UH_ALLOW_MISSION_ISOLATION_OFF: '1',
        UH_ENV_PASSTHROUGH_ALLOW: 'UH_*,ALLOWED_VAR',
        UH_RECEIPT_KEY: KEY,
        UH_API_TOKEN: API_TOKEN,
        ALLOWED_VAR: ALLOWED,
        WITHHELD_VAR: WITHHELD,
      },
    });
    client = await QueueClient.open({ ...loadConfig(env).queue, prefix }, redis.url);
  });
  afterAll(async () => {
    await client?.close();
    await worker?.stop('SIGTERM');
    await redis?.cleanup();
  });

  /**
   * A job written straight into Redis, past every producer check, as an agent holding Redis could:
   * the ref resolved as a producer would (for a correct contract digest), the record created and
   * the job added with the hostile mission as its payload.
   */
  async function forge(patch: Record<string, unknown>): Promise<string> {
    const { path, operationId } = hostileMission(repo, READ_ANCESTORS, {
      ...patch,
      sandbox: { env: { MARK_DIR: markDir }, ...(patch.sandbox as object) },
    });
    const mission = loadMissionFile(path);
    const benign = { ...mission, sandbox: { ...mission.sandbox, isolation: 'auto', env_passthrough: [] } } as Mission;
    const prepared = await prepareOperation(
      benign,
      { stateDir: dir('uh-hp-fs-'), cacheDir: dir('uh-hp-fc-') },
      OPERATION_PORTS,
    );
    const job = {
      operation_id: operationId,
      runtime: 'command',
      mission,
      base_commit: prepared.baseCommit,
      contract_digest: contractDigestOf(mission, prepared.runtime, prepared.baseCommit),
      attempt: 1,
    };
    await client.store.createOrAttach(job, { mission_id: mission.mission_id, prompt_digest: prepared.promptDigest });
    await (await client.queue('command')).add('operation', job, { jobId: jobIdFor(operationId) });
    return operationId;
  }

  async function settled(id: string): Promise<Receipt> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const record = await client.store.get(id);
      if (record?.state === 'finished') return (await readReceiptFromStore(client.store, id)) as Receipt;
      if (Date.now() > deadline) throw new Error(`${id} not settled: ${JSON.stringify(record)}\n${worker.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function redisText(): Promise<string> {
    const parts: string[] = [];
    for (const key of await redis.redis.keys(`{${prefix}}*`)) {
      const type = await redis.redis.type(key);
      if (type === 'string') parts.push((await redis.redis.get(key)) ?? '');
      else if (type === 'hash') parts.push(JSON.stringify(await redis.redis.hgetall(key)));
      else if (type === 'stream') parts.push(JSON.stringify(await redis.redis.xrange(key, '-', '+')));
    }
    return parts.join('\n');
  }

  it('sandbox.isolation: off under UH_ISOLATION=require: a failed receipt naming the field; the agent never ran', async () => {
    const id = await forge({ sandbox: { isolation: 'off' } });
    const receipt = await settled(id);
    expect(receipt.status).toBe('failed');
    expect(receipt.outcome.message).toContain(
      'sandbox.isolation: off is refused: this host requires isolation (UH_ISOLATION=require)',
    );
    expect(existsSync(join(markDir, 'agent-ran'))).toBe(false);
    expect(existsSync(join(workerState, 'operations', id, 'runtime.stdout.log'))).toBe(false);
    expect(leaksIn(await redisText(), SECRETS)).toEqual([]);
    expect(leaksUnder(workerState, SECRETS)).toEqual([]);
  });

  it('env_passthrough [UH_*]: refused by the worker whatever its allowlist; the signing key in no receipt, event, log or file', async () => {
    const id = await forge({ sandbox: { env_passthrough: ['UH_*'] } });
    const receipt = await settled(id);
    expect(receipt.status).toBe('failed');
    expect(receipt.outcome.message).toContain(
      'sandbox.env_passthrough[0]: "UH_*" reaches UH_*, which never passes to an agent',
    );
    expect(existsSync(join(markDir, 'agent-ran'))).toBe(false);
    const events = JSON.stringify(await redis.redis.xrange(client.store.keys.events(id), '-', '+'));
    expect(events).toContain('operation.completed');
    expect(leaksIn(JSON.stringify(receipt) + events + (await redisText()) + worker.output(), SECRETS)).toEqual([]);
    expect(leaksUnder(workerState, SECRETS)).toEqual([]);
  });

  it('an allowlisted variable passes under bwrap; a name outside the allowlist is refused', async () => {
    const allowed = await forge({ sandbox: { env_passthrough: ['ALLOWED_VAR'] } });
    const ok = await settled(allowed);
    expect(ok.status, JSON.stringify(ok.outcome)).toBe('completed');
    expect(ok.isolation?.kind).toBe('bwrap');
    const stdout = readFileSync(join(workerState, 'operations', allowed, 'runtime.stdout.log'), 'utf8');
    expect(stdout).toContain(`ALLOWED_VAR=${ALLOWED}`);
    expect(stdout).not.toContain(WITHHELD);
    expect(leaksIn(stdout, SECRETS)).toEqual([]);
    const withheld = await forge({ sandbox: { env_passthrough: ['WITHHELD_VAR'] } });
    const refused = await settled(withheld);
    expect(refused.status).toBe('failed');
    expect(refused.outcome.message).toContain(
      'sandbox.env_passthrough[0]: "WITHHELD_VAR" is not allowed on this host (UH_ENV_PASSTHROUGH_ALLOW allows UH_*,ALLOWED_VAR)',
    );
    expect(existsSync(join(workerState, 'operations', withheld, 'runtime.stdout.log'))).toBe(false);
  });
});

describe('where the host allows an unisolated run, its own secrets are still scrubbed', () => {
  it("an agent reading uh's /proc environ prints the receipt key and API token only as [redacted]", async () => {
    const state = dir('uh-hp-istate-');
    const { path, operationId } = hostileMission(repo, READ_ANCESTORS, {
      sandbox: { isolation: 'off', env: { MARK_DIR: dir('uh-hp-imark-') } },
    });
    const env = {
      UH_CACHE_DIR: dir('uh-hp-icache-'),
      UH_ALLOW_MISSION_ISOLATION_OFF: '1',
      UH_RECEIPT_KEY: KEY,
      UH_API_TOKEN: API_TOKEN,
    };
    const run = await runCli(['mission', 'run', path, '--json', '--state-dir', state], { cwd: repo, env });
    expect(run.code, run.stderr).toBe(0);
    const receipt = JSON.parse(run.stdout) as Receipt;
    expect(receipt.isolation?.kind).toBe('none');
    const stdout = readFileSync(join(state, 'operations', operationId, 'runtime.stdout.log'), 'utf8');
    // The agent did reach uh's environment through /proc, and every value came out scrubbed.
    expect(stdout).toContain('UH_RECEIPT_KEY=[redacted]');
    expect(stdout).toContain('UH_API_TOKEN=[redacted]');
    expect(leaksIn(run.stdout + run.stderr, SECRETS)).toEqual([]);
    expect(leaksUnder(state, SECRETS)).toEqual([]);
  });
});
