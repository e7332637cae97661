/**
 * Secrets against a hostile agent. The `command` runtime runs test/fixtures/bin/hostile-secrets.sh:
 * it prints its environment, then a planted provider key (passed through by name) split across
 * two writes with a pause between, on stdout, stderr and in the final-message sentinel; a check
 * prints a mission secret the same way. The secrets must appear in no file of the state dir, no
 * Redis value of the fleet's prefix, no `--json` output and no API answer, inline and through a
 * worker; GH_TOKEN of the worker never reaches the agent, even when the mission names it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

const HOSTILE = fileURLToPath(new URL('../fixtures/bin/hostile-secrets.sh', import.meta.url));
const PLANTED = 'sk-planted-4f9a2c7e1b8d6053';
const CHECK_SECRET = 'chk-token-93be71a04d2c58f6';
const GH = 'ghp_workerOnlyToken0123456789';
const ALL = [PLANTED, CHECK_SECRET, GH];
/** Shell: print $name in two writes (no newline between) with a pause. */
const split = (name: string) =>
  `printf '%s' "$(printf '%s' "$${name}" | cut -c1-9)"; sleep 0.2; printf '%s\\n' "$(printf '%s' "$${name}" | cut -c10-)"`;

let repo: string;
const dirs: string[] = [];

beforeAll(() => {
  repo = makeRepo({ 'README.md': '# secrets\n' });
  dirs.push(repo);
});
afterAll(() => dirs.forEach(removeDir));

/**
 * `missionEnv` (a secret in the mission's own `sandbox.env`) only inline: in queue mode the mission,
 * `sandbox.env` included, is the job's payload in Redis; a fleet passes secrets by name instead.
 */
function hostileMission(passthrough: string[], missionEnv: Record<string, string> = {}) {
  return writeMission(repo, [], {
    runtime_config_overrides: { command: { argv: ['sh', HOSTILE], kill_grace_ms: 500 } },
    sandbox: { env: missionEnv, env_passthrough: passthrough },
    verification: [
      {
        name: 'leaky-check',
        argv: [
          'sh',
          '-c',
          `${split('PLANTED_API_KEY')}; ${split(Object.keys(missionEnv)[0] ?? 'PLANTED_API_KEY')} >&2`,
        ],
      },
    ],
  });
}

/** Every file under `root`, as bytes, with the secrets it holds. */
function leaksUnder(root: string, secrets: string[]): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else if (st.isFile()) {
        const bytes = readFileSync(path);
        for (const s of secrets) if (bytes.includes(Buffer.from(s))) found.push(`${path}: ${s}`);
      }
    }
  };
  walk(root);
  return found;
}

const leaksIn = (text: string, secrets: string[]) => secrets.filter((s) => text.includes(s));
/** The host allows the planted key to be passed through (UH_ENV_PASSTHROUGH_ALLOW), nothing else. */
const workerEnv = { PLANTED_API_KEY: PLANTED, GH_TOKEN: GH, UH_ENV_PASSTHROUGH_ALLOW: 'PLANTED_API_KEY' };

describe('secrets, inline', () => {
  it('withholds GH_TOKEN and scrubs a passed-through key split across writes from every file and --json', async () => {
    const state = tempDir('uh-sec-state-');
    const cache = tempDir('uh-sec-cache-');
    dirs.push(state, cache);
    const { path, operationId } = hostileMission(['PLANTED_API_KEY'], { CHECK_TOKEN: CHECK_SECRET });
    const run = await runCli(['mission', 'run', path, '--json', '--state-dir', state], {
      cwd: repo,
      env: { ...workerEnv, UH_CACHE_DIR: cache },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(leaksIn(run.stdout + run.stderr, ALL)).toEqual([]);
    const opDir = join(state, 'operations', operationId);
    const stdoutLog = readFileSync(join(opDir, 'runtime.stdout.log'), 'utf8');
    expect(stdoutLog).toContain('PATH='); // the agent did print its environment
    expect(stdoutLog).toContain('PLANTED_API_KEY=[redacted]');
    expect(stdoutLog).toContain('GH_TOKEN seen as []'); // never given to the agent
    expect(stdoutLog).not.toMatch(/^(REDIS_URL|UH_CACHE_DIR)=/m);
    expect(readFileSync(join(opDir, 'runtime.stderr.log'), 'utf8')).toContain('[redacted]');
    expect(readFileSync(join(opDir, 'runtime-final.txt'), 'utf8')).toBe('leaking [redacted]');
    // stdout and stderr of the check share one log: both secrets are there, scrubbed, in either order
    expect(readFileSync(join(opDir, 'check-leaky-check.log'), 'utf8').split('\n').sort()).toEqual([
      '',
      '[redacted]',
      '[redacted]',
    ]);
    const receipt = JSON.parse(run.stdout) as { verdict: string; checks: { passed: boolean }[] };
    expect(receipt.checks[0]?.passed).toBe(true);
    expect(leaksUnder(state, ALL)).toEqual([]);
    const status = await runCli(['mission', 'status', operationId, '--json', '--state-dir', state], {
      cwd: repo,
      env: { UH_CACHE_DIR: cache },
    });
    expect(status.code).toBe(0);
    expect(leaksIn(status.stdout, ALL)).toEqual([]);
  });

  it('never passes GH_TOKEN (uh pushes with it), even named by the mission and allowed by the host: exit 2', async () => {
    const state = tempDir('uh-sec-state-');
    dirs.push(state);
    const { path, operationId } = hostileMission(['PLANTED_API_KEY', 'GH_TOKEN']);
    const run = await runCli(['mission', 'run', path, '--json', '--state-dir', state], {
      cwd: repo,
      env: { ...workerEnv, UH_ENV_PASSTHROUGH_ALLOW: 'PLANTED_API_KEY,GH_TOKEN' },
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(
      'sandbox.env_passthrough[1]: "GH_TOKEN" reaches GH_TOKEN, which never passes to an agent',
    );
    expect(existsSync(join(state, 'operations', operationId))).toBe(false);
    expect(leaksIn(run.stdout + run.stderr, ALL)).toEqual([]);
  });
});

describe('secrets, through a worker on real Redis and the HTTP API', () => {
  let redis: TestRedis;
  let worker: WorkerProcess;
  let api: ChildProcess;
  let base: string;
  let env: Record<string, string>;
  let workerState: string;
  const TOKEN = 'secrets-test-token-0123456789abcdef';

  beforeAll(async () => {
    redis = await startTestRedis('secrets');
    const cache = tempDir('uh-sec-qcache-');
    workerState = tempDir('uh-sec-wstate-');
    dirs.push(cache, workerState);
    env = {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: redis.prefix('q'),
      UH_CACHE_DIR: cache,
      UH_ALLOW_LOCAL_REPOS: '1',
      UH_ENV_PASSTHROUGH_ALLOW: 'PLANTED_API_KEY',
    };
    worker = await startWorker(['--runtime', 'command', '--state-dir', workerState], {
      cwd: repo,
      env: { ...env, ...workerEnv },
    });
    api = spawn(process.execPath, [UH_BIN, 'api', 'start', '--port', '0', '--state-dir', tempDir('uh-sec-api-')], {
      cwd: repo,
      env: { ...process.env, ...env, UH_LOG_LEVEL: 'silent', UH_API_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    base = await new Promise<string>((resolve, reject) => {
      let out = '';
      api.stdout?.on('data', (c) => {
        out += c;
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1] as string);
      });
      api.on('close', (code) => reject(new Error(`api exited ${code}: ${out}`)));
    });
  });

  afterAll(async () => {
    api?.kill('SIGTERM');
    await worker?.stop('SIGTERM');
    await redis?.cleanup();
  });

  /** Every value under the test prefix, whatever its type. */
  async function redisText(): Promise<string> {
    const keys = await redis.redis.keys(`{${env.UH_REDIS_PREFIX}}*`);
    const parts: string[] = [];
    for (const key of keys) {
      const type = await redis.redis.type(key);
      if (type === 'string') parts.push((await redis.redis.get(key)) ?? '');
      else if (type === 'hash') parts.push(JSON.stringify(await redis.redis.hgetall(key)));
      else if (type === 'list') parts.push(JSON.stringify(await redis.redis.lrange(key, 0, -1)));
      else if (type === 'set') parts.push(JSON.stringify(await redis.redis.smembers(key)));
      else if (type === 'zset') parts.push(JSON.stringify(await redis.redis.zrange(key, 0, -1)));
      else if (type === 'stream') parts.push(JSON.stringify(await redis.redis.xrange(key, '-', '+')));
    }
    return parts.join('\n');
  }

  it('keeps the secrets out of Redis, the worker state dir, --json output and every API answer', async () => {
    const producerState = tempDir('uh-sec-pstate-');
    dirs.push(producerState);
    const { path, operationId } = hostileMission(['PLANTED_API_KEY']);
    const waited = await runCli(['mission', 'submit', path, '--wait', '--json', '--state-dir', producerState], {
      cwd: repo,
      env,
    });
    expect(waited.code, waited.stderr).toBe(0);
    expect(leaksIn(waited.stdout + waited.stderr, ALL)).toEqual([]);
    const stdoutLog = readFileSync(join(workerState, 'operations', operationId, 'runtime.stdout.log'), 'utf8');
    expect(stdoutLog).toContain('PLANTED_API_KEY=[redacted]');
    expect(stdoutLog).toContain('GH_TOKEN seen as []');
    expect(leaksUnder(workerState, ALL)).toEqual([]);
    expect(leaksUnder(producerState, ALL)).toEqual([]);
    const stored = await redisText();
    expect(stored).toContain('leaking [redacted]'); // the final message artifact is there, scrubbed
    expect(readFileSync(join(workerState, 'operations', operationId, 'check-leaky-check.log'), 'utf8')).toContain(
      '[redacted]',
    );
    expect(leaksIn(stored, ALL)).toEqual([]);
    const status = await runCli(['mission', 'status', operationId, '--json', '--redis', redis.url], { cwd: repo, env });
    expect(leaksIn(status.stdout, ALL)).toEqual([]);
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const sub of ['', '/receipt', '/final-message', '/diff', '/events']) {
      const res = await fetch(`${base}/v1/operations/${operationId}${sub}`, { headers: auth });
      expect(res.status, sub).toBe(200);
      expect(leaksIn(await res.text(), ALL), sub).toEqual([]);
    }
  });
});
