/**
 * Every log line is NDJSON (docs/observability.md, "Logs"): a worker's stdout and stderr while
 * it starts, runs a mission and stops (plain and --json), and `uh api start`'s access log: one
 * line per request on stderr with who (token id, tenant), what (method, route) and the result
 * (status, duration), never the token; stdout holds only the "listening on" line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { submitOperations } from '../../src/producers/submit.js';
import { loadConfig } from '../../src/shared/config.js';
import { parseMission } from '../../src/shared/contracts/load-mission.js';
import { UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';

let redis: TestRedis;
let repo: string;
const dirs: string[] = [];

beforeAll(async () => {
  redis = await startTestRedis('ndjson');
  repo = makeRepo({ 'README.md': '# logs\n' });
  dirs.push(repo);
});
afterAll(async () => {
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

interface Spawned {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  until: (what: () => boolean, label: string, ms?: number) => Promise<void>;
  exited: Promise<number | null>;
}

function run(args: string[], env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, [UH_BIN, ...args], {
    cwd: repo,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (c) => (out += c));
  child.stderr?.on('data', (c) => (err += c));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const until = async (what: () => boolean, label: string, ms = 60_000) => {
    const deadline = Date.now() + ms;
    while (!what()) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`${label} not seen; stdout:\n${out}\nstderr:\n${err}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  return { child, stdout: () => out, stderr: () => err, until, exited };
}

/** Each non-empty line parsed; a line that is not JSON fails the test naming it. */
function ndjson(text: string, stream: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`${stream}: not NDJSON: ${line}`);
      }
    });
}

async function runMission(prefix: string, id: string, state: string, cache: string): Promise<void> {
  const client = await QueueClient.open(loadConfig({ UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cache }).queue, redis.url);
  try {
    const mission = parseMission(
      {
        schema_version: 'uh.mission.v0',
        mission_id: 'logs',
        operation_id: id,
        title: 'Logs',
        objective: 'Print',
        repository: { url: repo, ref: 'main' },
        runtime: 'command',
        runtime_config_overrides: { command: { argv: ['sh', '-c', 'echo plain agent output; echo to stderr >&2'] } },
      },
      repo,
    );
    await submitOperations(client, [mission], { stateDir: state, cacheDir: cache, tenant: 'team-logs' });
    const deadline = Date.now() + 60_000;
    while ((await client.store.get(id))?.state !== 'finished') {
      if (Date.now() > deadline) throw new Error(`${id} did not finish`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await client.close();
  }
}

describe('worker logs', () => {
  it.each([
    { mode: 'plain', flags: [] as string[] },
    { mode: '--json', flags: ['--json'] },
  ])(
    '$mode: stdout and stderr are all NDJSON through start, a mission and stop',
    async ({ mode, flags }) => {
      const prefix = redis.prefix(mode === 'plain' ? 'plain' : 'json');
      const state = tempDir('uh-nd-state-');
      const cache = tempDir('uh-nd-cache-');
      dirs.push(state, cache);
      const env = {
        REDIS_URL: redis.url,
        UH_REDIS_PREFIX: prefix,
        UH_CACHE_DIR: cache,
        UH_ISOLATION: 'off',
        UH_LOG_LEVEL: 'debug',
      };
      // Without --runtime: the runtimes not ready here are skipped, said in a log line.
      const worker = run(['worker', 'start', '--state-dir', state, ...flags], env);
      await worker.until(() => /"event":"ready"/.test(worker.stdout() + worker.stderr()), 'ready');
      await runMission(prefix, `logs-${mode === 'plain' ? 'p' : 'j'}`, state, cache);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      const out = ndjson(worker.stdout(), 'stdout');
      const err = ndjson(worker.stderr(), 'stderr');
      const lifecycle = mode === 'plain' ? err : out;
      expect(lifecycle.map((l) => l.event)).toEqual(expect.arrayContaining(['ready', 'stopping', 'stopped']));
      if (mode === 'plain') {
        expect(out).toEqual([]);
        const ready = err.find((l) => l.event === 'ready');
        expect(ready?.msg).toMatch(/^uh worker: ready worker=/);
      }
      // The pipeline's own lines (claim, runtime start, settle) are pino lines on stderr.
      expect(err.map((l) => l.msg)).toEqual(expect.arrayContaining(['claim', 'runtime start', 'settle']));
      expect(err.every((l) => typeof l.level === 'number' && typeof l.time === 'number')).toBe(true);
    },
    120_000,
  );
});

describe('the API access log', () => {
  let api: Spawned;
  let base = '';
  const TOKEN = `ci-${'x'.repeat(40)}`;

  beforeAll(async () => {
    const etc = tempDir('uh-nd-etc-');
    dirs.push(etc);
    const file = join(etc, 'tokens.yaml');
    const sha256 = createHash('sha256').update(TOKEN).digest('hex');
    writeFileSync(file, `tokens:\n  - id: ci-team-a\n    tenant: team-a\n    scopes: [read]\n    sha256: ${sha256}\n`);
    api = run(['api', 'start', '--port', '0'], {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: redis.prefix('api'),
      UH_CACHE_DIR: etc,
      UH_API_TOKEN: '',
      UH_API_TOKENS_FILE: file,
      UH_LOG_LEVEL: 'silent',
    });
    await api.until(() => /listening on (http:\/\/\S+)/.test(api.stdout()), 'listening');
    base = (/listening on (http:\/\/\S+)/.exec(api.stdout()) as RegExpExecArray)[1] as string;
  });
  afterAll(async () => {
    api?.child.kill('SIGTERM');
    await api?.exited;
  });

  it('writes one NDJSON line per request: who, what, the result; never the token', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const requests = [
      { path: '/v1/operations', headers: auth, status: 200, route: '/v1/operations', token_id: 'ci-team-a' },
      {
        path: '/v1/operations/nope?x=1',
        headers: auth,
        status: 404,
        route: '/v1/operations/:id',
        token_id: 'ci-team-a',
      },
      { path: '/metrics', headers: auth, status: 403, route: '/metrics', token_id: 'ci-team-a' },
      { path: '/v1/operations', headers: {}, status: 401, route: '/v1/operations', token_id: null },
      { path: '/healthz', headers: {}, status: 200, route: '/healthz', token_id: null },
    ];
    const ids: string[] = [];
    for (const r of requests) {
      const res = await fetch(`${base}${r.path}`, { headers: r.headers });
      await res.arrayBuffer();
      expect(res.status).toBe(r.status);
      ids.push(res.headers.get('x-request-id') as string);
    }
    await api.until(() => ids.every((id) => api.stderr().includes(id)), 'an access line per request', 10_000);
    const lines = ndjson(api.stderr(), 'api stderr');
    requests.forEach((r, i) => {
      const line = lines.find((l) => l.request_id === ids[i]);
      expect(line, r.path).toMatchObject({
        method: 'GET',
        route: r.route,
        path: r.path.split('?')[0],
        status: r.status,
        token_id: r.token_id,
        tenant: r.token_id ? 'team-a' : null,
        msg: 'request',
      });
      expect(typeof line?.duration_ms).toBe('number');
      expect(typeof line?.time).toBe('number');
    });
    expect(lines).toHaveLength(requests.length);
    expect(api.stderr()).not.toContain(TOKEN);
    expect(api.stdout().trim().split('\n')).toHaveLength(1);
  });
});
