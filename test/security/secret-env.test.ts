/**
 * `sandbox.env` secrets never travel in clear through the queue (docs/security.md, "Secrets in
 * missions"): a mission passes `DEPLOY_TOKEN: {secret_ref: deploy-token}`, the worker reads the
 * value from its UH_SECRETS_DIR just before the runtime starts. The agent (the `command`
 * runtime) gets it (it prints its SHA-256 in the final message, and the value itself, which uh
 * scrubs), while the raw BullMQ job hash, every other value under the fleet's prefix, the API
 * and bull-board (page and JSON) never hold it. A value in clear under a secret-looking name is
 * refused before anything is written (CLI exit 2, API 400); a reference the worker cannot
 * resolve blocks the operation (exit 3) naming the secret; bull-board masks a secret-looking
 * value in a job some other writer put in Redis.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { waitFor } from '../support/process.js';
import { writeMission } from '../support/mission-file.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { hostTempDir, removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

const SECRET = 'dt-7c41f09a2be85d36-secret';
const OTHER_SECRET = 'xs-55d0a8c3e91b7f24-other';
const TOKEN = 'secret-env-api-token-0123456789abcdef';
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
/**
 * The agent: holds until $RELEASE exists (when set), then the secret's hash in its final message,
 * and both values on stdout (uh scrubs them).
 */
const AGENT = [
  'if [ -n "$RELEASE" ]; then while [ ! -e "$RELEASE" ]; do sleep 0.05; done; fi',
  'h=$(printf %s "$DEPLOY_TOKEN" | sha256sum | cut -c1-64)',
  'echo "leak:$DEPLOY_TOKEN leak:$BUILD_SALT"',
  'printf \'```uh-runtime-final-message\\nsha=%s\\n```\\n\' "$h"',
].join('; ');

let redis: TestRedis;
let prefix: string;
let env: Record<string, string>;
let repo: string;
let api: ChildProcess | undefined;
let base: string;
let stateDir: string;
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
const dir = (p: string) => (dirs.push(tempDir(p)), dirs[dirs.length - 1] as string);

function secretMission(sandboxEnv: Record<string, unknown>) {
  return writeMission(repo, [], {
    runtime_config_overrides: { command: { argv: ['sh', '-c', AGENT], kill_grace_ms: 500 } },
    sandbox: { env: sandboxEnv },
  });
}

/** The text of every file under `root`. */
function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name), 'latin1'));
}

/** Every value under the fleet's prefix, as text: strings, hashes, lists, sets, streams. */
async function everything(): Promise<string> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.redis.scan(cursor, 'MATCH', `{${prefix}}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.redis.type(key);
      if (type === 'string') out.push((await redis.redis.get(key)) ?? '');
      else if (type === 'hash') out.push(JSON.stringify(await redis.redis.hgetall(key)));
      else if (type === 'list') out.push(JSON.stringify(await redis.redis.lrange(key, 0, -1)));
      else if (type === 'set') out.push(JSON.stringify(await redis.redis.smembers(key)));
      else if (type === 'zset') out.push(JSON.stringify(await redis.redis.zrange(key, 0, -1)));
      else if (type === 'stream') out.push(JSON.stringify(await redis.redis.xrange(key, '-', '+')));
    }
  } while (cursor !== '0');
  return out.join('\n');
}

async function startApi(): Promise<string> {
  api = spawn(process.execPath, [UH_BIN, 'api', 'start', '--port', '0', '--state-dir', dir('uh-se-api-')], {
    cwd: repo,
    env: { ...process.env, ...env, UH_LOG_LEVEL: 'silent', UH_API_TOKEN: TOKEN, UH_ALLOW_LOCAL_REPOS: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child = api;
  return new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child.on('close', (code) => reject(new Error(`api exited ${code}: ${out}`)));
  });
}

beforeAll(async () => {
  redis = await startTestRedis('secret-env');
  prefix = redis.prefix('se');
  repo = makeRepo({ 'README.md': '# secret env\n' });
  dirs.push(repo);
  const secrets = dir('uh-se-secrets-');
  writeFileSync(join(secrets, 'deploy-token'), `${SECRET}\n`, { mode: 0o600 });
  writeFileSync(join(secrets, 'build-salt'), OTHER_SECRET, { mode: 0o600 });
  // The worker's cache is its own; the artifact store is the fleet's one (docs/deploy.md).
  env = {
    REDIS_URL: redis.url,
    UH_REDIS_PREFIX: prefix,
    UH_CACHE_DIR: dir('uh-se-cache-'),
    UH_ARTIFACT_STORE: `dir:${dir('uh-se-artifacts-')}`,
  };
  stateDir = dir('uh-se-state-');
  workers.push(
    await startWorker(['--runtime', 'command', '--state-dir', stateDir], {
      cwd: stateDir,
      env: { ...env, UH_SECRETS_DIR: secrets },
    }),
  );
  base = await startApi();
}, 60_000);

afterAll(async () => {
  api?.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.stop()));
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

const auth = { authorization: `Bearer ${TOKEN}` };
const pagesOf = (paths: string[]) =>
  Promise.all(
    paths.map(async (path) => {
      const r = await fetch(`${base}${path}`, { headers: auth });
      return { path, status: r.status, text: await r.text() };
    }),
  );

describe('a secret passed by reference', () => {
  it('reaches the agent, and never Redis, the API or bull-board', async () => {
    // The agent holds until released: a completed job leaves Redis at once (the record is the
    // truth), so the job hash and bull-board's job are read while it runs.
    const releaseDir = hostTempDir('uh-se-release-'); // not /tmp: the sandbox's /tmp is its own
    dirs.push(releaseDir);
    const release = join(releaseDir, 'go');
    const mission = secretMission({
      DEPLOY_TOKEN: { secret_ref: 'deploy-token' },
      BUILD_SALT: { secret_ref: 'build-salt' },
      RELEASE: release,
    });
    const submitting = runCli(['mission', 'submit', mission.path, '--wait', '--json'], { cwd: repo, env });
    const jobKey = `{${prefix}}:bull:runtime.command:op.${mission.operationId}`;
    const active = async () => Boolean(await redis.redis.hget(jobKey, 'processedOn'));
    expect(await waitFor(active, 30_000, 50), workers[0]?.output()).toBe(true);
    const job = await redis.redis.hgetall(jobKey);
    expect(JSON.parse(job.data as string).mission.sandbox.env.DEPLOY_TOKEN).toEqual({ secret_ref: 'deploy-token' });
    const board = await pagesOf([
      '/admin/queues',
      '/admin/queues/api/queues?activeQueue=runtime.command&status=active&page=1',
      `/admin/queues/api/queues/runtime.command/op.${mission.operationId}`,
    ]);
    const running = await everything();
    writeFileSync(release, '');

    const done = await submitting;
    expect(done.code, done.stderr).toBe(0);
    const receipt = JSON.parse(done.stdout);
    // The agent received the value (trailing newline of the file dropped): its hash is in the final message.
    expect(receipt.final_message).toBe(`sha=${sha(SECRET)}`);
    const stored = await everything();
    expect(stored).toContain(mission.operationId);
    for (const s of [SECRET, OTHER_SECRET]) {
      expect(JSON.stringify(job)).not.toContain(s);
      expect(running).not.toContain(s);
      expect(stored).not.toContain(s);
      expect(done.stdout + done.stderr).not.toContain(s);
    }
    // What the agent printed is in the worker's logs, scrubbed; no file of its state dir holds a value.
    const files = filesUnder(stateDir);
    expect(files.join('\n')).toContain('leak:[redacted] leak:[redacted]');
    for (const text of files) for (const s of [SECRET, OTHER_SECRET]) expect(text).not.toContain(s);

    const pages = [
      ...board,
      ...(await pagesOf([
        `/v1/operations/${mission.operationId}`,
        `/v1/operations/${mission.operationId}/receipt`,
        `/v1/operations/${mission.operationId}/events`,
        `/v1/operations?limit=50`,
      ])),
    ];
    for (const page of pages) {
      expect(page.status, page.path).toBe(200);
      expect(page.text, page.path).not.toContain(SECRET);
      expect(page.text, page.path).not.toContain(OTHER_SECRET);
    }
    expect(board[1]?.text).toContain('deploy-token'); // the board shows the reference, by name
  }, 90_000);

  it('a reference the worker cannot resolve blocks the operation, naming the secret', async () => {
    const mission = secretMission({ DEPLOY_TOKEN: { secret_ref: 'not-on-this-worker' } });
    const done = await runCli(['mission', 'submit', mission.path, '--wait', '--json'], { cwd: repo, env });
    expect(done.code, done.stderr).toBe(3);
    const receipt = JSON.parse(done.stdout);
    expect(receipt).toMatchObject({ status: 'blocked' });
    expect(receipt.outcome).toMatchObject({
      raw: 'secret_unavailable',
      message:
        'sandbox.env.DEPLOY_TOKEN: secret "not-on-this-worker" cannot be read from $UH_SECRETS_DIR/not-on-this-worker (ENOENT)',
    });
    expect(receipt.final_message_source).toBe('none'); // the runtime never started
  }, 60_000);
});

describe('a secret in clear', () => {
  it('is refused before anything is written: CLI exit 2, API 400, naming the field', async () => {
    const mission = secretMission({ DEPLOY_TOKEN: SECRET });
    const cli = await runCli(['mission', 'submit', mission.path, '--json'], { cwd: repo, env });
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain('sandbox.env.DEPLOY_TOKEN');
    expect(cli.stderr).toContain('secret_ref');
    expect(cli.stderr).not.toContain(SECRET);
    const body = {
      schema_version: 'uh.mission.v0',
      mission_id: 'm-clear',
      operation_id: `op-clear-api-${process.pid}`,
      title: 'clear',
      objective: 'clear',
      repository: { url: repo, ref: 'main' },
      runtime: 'command',
      runtime_config_overrides: { command: { argv: ['true'] } },
      sandbox: { env: { API_KEY: SECRET } },
    };
    const r = await fetch(`${base}/v1/missions`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(r.status).toBe(400);
    expect(await r.text()).toContain('sandbox.env.API_KEY');
    expect(
      await redis.redis.exists(`{${prefix}}:op:${mission.operationId}`, `{${prefix}}:op:${body.operation_id}`),
    ).toBe(0);
    expect(await everything()).not.toContain(SECRET);
  });

  it('that another writer put in a job is masked by bull-board', async () => {
    const queue = new Queue('runtime.nobody', { connection: redis.redis.duplicate(), prefix: `{${prefix}}:bull` });
    await queue.add('op.foreign', {
      mission: {
        sandbox: { env: { API_TOKEN: SECRET, PLAIN: 'visible-value' } },
        runtime_config_overrides: { x: { extra_headers: { 'X-Custom': OTHER_SECRET } } },
      },
    });
    await queue.close();
    // The board re-reads its queues at most every 5 s: poll until runtime.nobody shows up.
    let text = '';
    const shown = async () => {
      const url = `${base}/admin/queues/api/queues?activeQueue=runtime.nobody&status=waiting&page=1`;
      text = await (await fetch(url, { headers: auth })).text();
      return text.includes('visible-value');
    };
    expect(await waitFor(shown, 15_000, 250)).toBe(true);
    expect(text).toContain('visible-value');
    expect(text).toContain('[masked]');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(OTHER_SECRET);
  }, 30_000);
});
