/**
 * Default-deny egress (docs/security.md "Network"): a hostile agent under bubblewrap in the
 * default `egress` mode tries Redis (127.0.0.1:6379), a local HTTP API, a loopback port nobody
 * allowed and the cloud metadata address, directly and through uh's proxy; every one is refused,
 * and the receipt lists what was asked and refused. The model server the mission allows (a
 * scripted server on 127.0.0.1:0) is reached both through HTTP(S)_PROXY (curl) and through the
 * transparent path (Node 20's fetch, which ignores the proxy variables). The same agent in `host`
 * mode (where the fleet allows it) reaches all of them: the test reaches the defence it names.
 * The attack cases also run as fleets (test/support/fleet.ts): isolated, inline and through a
 * worker on real Redis, as root and as the deployment's user `uh` (not root: as the current user),
 * each asserting the host, the user's checkout, $HOME, the mirrors, the pool and the signing keys
 * are untouched and the verdict is verified; a name reaches its server through the sandbox's
 * /etc/hosts forwarder; the real
 * codex runs its mission in egress mode (the real pi: test/integration/mission-run-pi-hermes.test.ts).
 * Needs bwrap and Redis on 127.0.0.1:6379.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../support/cli.js';
import {
  agentUid,
  commandMission,
  firstMission,
  fleetTable,
  poolPristine,
  runMission,
  signingKeys,
  startFleet,
  stopFleet,
  type Fleet,
} from '../support/fleet.js';
import { checkoutFingerprint, makeRepo } from '../support/git-repo.js';
import { realRuntimeBinary } from '../support/real-runtimes.js';
import { startResponsesServer, type ResponsesServer } from '../support/responses-server.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { hostileMission, requireBwrap, treeFingerprint } from './isolation-helpers.js';

/** Each probe's outcome, written to net.json in the worktree (so it lands in the diff). */
const PROBE = String.raw`
const net = require('node:net');
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');
const [redis, api, other, model] = process.argv.slice(2).map(Number);
const proxy = new URL(process.env.HTTP_PROXY || 'http://127.0.0.1:1');
const tcp = (port, host, send) => new Promise((done) => {
  const s = net.connect(port, host);
  let got = '';
  s.setTimeout(5000, () => { s.destroy(); done('timeout'); });
  s.on('connect', () => s.write(send));
  s.on('data', (d) => { got += d; if (got.includes('\n')) { s.destroy(); done('answered: ' + got.split('\r\n')[0]); } });
  s.on('error', (e) => done('error: ' + e.code));
  s.on('close', () => done(got ? 'answered: ' + got.split('\r\n')[0] : 'closed'));
});
const viaProxy = (line) => tcp(Number(proxy.port), proxy.hostname, line + '\r\nHost: x\r\n\r\n');
const curl = (url) => { try { return execFileSync('curl', ['--noproxy', '', '-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '10', url]).toString(); } catch (e) { return 'curl failed: ' + e.status; } };
(async () => {
  const out = {
    redis_direct: await tcp(redis, '127.0.0.1', 'PING\r\n'),
    api_direct: await tcp(api, '127.0.0.1', 'GET / HTTP/1.0\r\n\r\n'),
    other_direct: await tcp(other, '127.0.0.1', 'hello\n'),
    redis_proxy: await viaProxy('CONNECT 127.0.0.1:' + redis + ' HTTP/1.1'),
    api_proxy: await viaProxy('GET http://127.0.0.1:' + api + '/ HTTP/1.1'),
    other_proxy: await viaProxy('CONNECT localhost:' + other + ' HTTP/1.1'),
    metadata_proxy: await viaProxy('GET http://169.254.169.254/latest/meta-data/ HTTP/1.1'),
    model_curl: curl('http://127.0.0.1:' + model + '/v1/models'),
    model_fetch: await fetch('http://127.0.0.1:' + model + '/v1/models').then((r) => String(r.status), (e) => 'fetch failed: ' + (e.cause && e.cause.code)),
    proxy_env: process.env.HTTPS_PROXY || null,
  };
  fs.writeFileSync('net.json', JSON.stringify(out, null, 1) + '\n');
})();
`;

let repo: string;
let cacheDir: string;
let home: string;
const created: string[] = [];
const servers: (Server | HttpServer)[] = [];
const hits = { api: 0, other: 0, model: 0 };
let ports: { api: number; other: number; model: number };

async function listen(server: Server | HttpServer, host = '127.0.0.1'): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  requireBwrap();
  repo = makeRepo({ 'README.md': '# demo\n', 'probe.cjs': PROBE });
  cacheDir = tempDir('uh-egress-cache-');
  home = tempDir('uh-egress-home-');
  created.push(repo, cacheDir, home);
  const api = createHttpServer((_req, res) => {
    hits.api++;
    res.end('{"api":true}');
  });
  const other = createServer((socket) => {
    hits.other++;
    socket.end('other\n');
  });
  const model = createHttpServer((_req, res) => {
    hits.model++;
    res.setHeader('content-type', 'application/json');
    res.end('{"data":[]}');
  });
  ports = { api: await listen(api), other: await listen(other), model: await listen(model) };
});
afterAll(() => {
  servers.forEach((s) => s.close());
  created.forEach(removeDir);
});

/** The redis check: exit 0 only when Redis cannot be reached (checks run in the same mode). */
const REDIS_REFUSED_CHECK = {
  name: 'redis-refused',
  argv: [
    'node',
    '-e',
    "require('net').connect(6379,'127.0.0.1').on('connect',()=>process.exit(1)).on('error',()=>process.exit(0))",
  ],
  timeout_seconds: 30,
};

async function runProbe(
  sandbox: Record<string, unknown>,
  env: Record<string, string> = {},
  queue: { stateDir: string } | null = null,
) {
  const stateDir = queue?.stateDir ?? tempDir('uh-egress-state-');
  created.push(stateDir);
  const script = `node probe.cjs 6379 ${ports.api} ${ports.other} ${ports.model}`;
  const { path, operationId } = hostileMission(repo, script, {
    sandbox,
    scope: { allowed_change_globs: ['net.json'] },
    verification: [REDIS_REFUSED_CHECK],
  });
  const before = checkoutFingerprint(repo);
  const command = queue ? ['mission', 'submit', path, '--wait'] : ['mission', 'run', path];
  const r = await runCli([...command, '--json', '--state-dir', stateDir], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir, HOME: home, ...env },
  });
  expect(checkoutFingerprint(repo)).toBe(before);
  expect(r.stdout, r.stderr).not.toBe('');
  const receipt = JSON.parse(r.stdout);
  const patch = readFileSync(join(stateDir, 'operations', operationId, 'diff.patch'), 'utf8');
  const json = patch
    .split('\n')
    .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
    .map((l) => l.slice(1))
    .join('\n');
  return { code: r.code, stderr: r.stderr, receipt, net: JSON.parse(json) as Record<string, string> };
}

describe('egress: the default network of an isolated agent', () => {
  it('refuses Redis, the API, other loopback ports and metadata; the allowed model server is reached both ways', async () => {
    const before = { ...hits };
    const { code, stderr, receipt, net } = await runProbe({ egress: [`127.0.0.1:${ports.model}`] });
    expect(code, stderr).toBe(0);
    // Direct: the namespace has only its own loopback; nothing of the host's listens there.
    expect(net.redis_direct).toBe('error: ECONNREFUSED');
    expect(net.api_direct).toBe('error: ECONNREFUSED');
    expect(net.other_direct).toBe('error: ECONNREFUSED');
    // Through the proxy: refused by name before any connection is made.
    for (const key of ['redis_proxy', 'api_proxy', 'other_proxy', 'metadata_proxy'])
      expect(net[key], key).toMatch(/^answered: HTTP\/1\.1 403/);
    expect(hits.api - before.api).toBe(0);
    expect(hits.other - before.other).toBe(0);
    // The allowed server: curl through HTTP_PROXY (--noproxy '' overrides NO_PROXY's loopback), Node 20's
    // fetch through the transparent forwarder.
    expect(net.model_curl).toBe('200');
    expect(net.model_fetch).toBe('200');
    expect(hits.model - before.model).toBe(2);
    expect(net.proxy_env).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // The checks ran in the same mode: Redis unreachable from a check too.
    expect(receipt.verdict).toBe('verified');
    expect(receipt.isolation).toMatchObject({ kind: 'bwrap', network: 'egress' });
    const egress = receipt.isolation.egress;
    expect(egress.allowed).toContain(`127.0.0.1:${ports.model}`);
    expect(egress.asked).toEqual(expect.arrayContaining([`127.0.0.1:6379`, `127.0.0.1:${ports.model}`]));
    expect(egress.refused).toEqual(
      expect.arrayContaining([
        '127.0.0.1:6379 (not allowed)',
        `127.0.0.1:${ports.api} (not allowed)`,
        `localhost:${ports.other} (not allowed)`,
        '169.254.169.254:80 (not allowed)',
      ]),
    );
  });

  it('a model server the mission does not allow is not reached either way', async () => {
    const before = hits.model;
    const { net } = await runProbe({});
    expect(net.model_curl).toBe('403');
    expect(net.model_fetch).toBe('fetch failed: ECONNREFUSED');
    expect(hits.model).toBe(before);
  });

  it('host mode (allowed by the fleet) reaches them all: the defence above is what stops the probe', async () => {
    const before = { ...hits };
    const { code, stderr, receipt, net } = await runProbe({ network: 'host' }, { UH_ALLOW_MISSION_NETWORK_HOST: '1' });
    expect(code, stderr).toBe(1); // the redis-refused check fails: Redis answered
    expect(net.redis_direct).toMatch(/^answered: /);
    expect(net.api_direct).toMatch(/^answered: HTTP\/1\.[01] 200/);
    expect(hits.api - before.api).toBe(1);
    expect(hits.other - before.other).toBe(1);
    expect(receipt.isolation).toMatchObject({ kind: 'bwrap', network: 'host' });
    expect(receipt.isolation.egress).toBeUndefined();
  });

  it('host mode is refused where the fleet does not allow it (exit 2, naming the setting)', async () => {
    const { path } = hostileMission(repo, 'true', { sandbox: { network: 'host' } });
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', tempDir('uh-egress-state-')], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/sandbox\.network: host is not allowed on this host \(UH_ALLOW_MISSION_NETWORK_HOST/);
  });

  it('a malformed egress entry is refused with exit 2 naming its path', async () => {
    const { path } = hostileMission(repo, 'true', { sandbox: { egress: ['http://example.com/'] } });
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', tempDir('uh-egress-state-')], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/sandbox\.egress\[0\]/);
  });
});

/** The lines the patch adds to `path`. */
function addedTo(patch: string, path: string): string {
  const section = patch.split(/^diff --git /m).find((d) => d.startsWith(`a/${path} b/${path}\n`)) ?? '';
  return section
    .split('\n')
    .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
    .map((l) => l.slice(1))
    .join('\n');
}

/** What the probe must leave as it was: the user's checkout, $HOME, the mirrors, the keys. */
function fleetBaseline(f: Fleet): Record<string, string> {
  return {
    checkout: checkoutFingerprint(f.repo),
    home: treeFingerprint(f.home),
    mirrors: treeFingerprint(join(f.cacheDir, 'mirrors')),
    keys: JSON.stringify(signingKeys(f)),
  };
}

describe('egress: fleets (test/support/fleet.ts)', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis('egress');
  });
  afterAll(async () => {
    await redis?.cleanup();
  });

  describe.each(fleetTable(['inline', 'worker'], ['auto']))('(%s, UH_ISOLATION=%s, as %s)', (mode, isolation, user) => {
    let f: Fleet;
    beforeAll(async () => {
      f = await startFleet({
        mode,
        isolation,
        user,
        redis,
        tag: 'egress',
        files: { 'README.md': '# demo\n', 'src/app.txt': 'v1\n', 'probe.cjs': PROBE },
      });
      await firstMission(f, { verification: [REDIS_REFUSED_CHECK] });
    }, 90_000);
    afterAll(async () => {
      await stopFleet(f);
    });

    it("refuses Redis (its own fleet's too), the API and a loopback port nobody allowed; reaches the allowed model server", async () => {
      const hostFile = `/uh-egress-${process.pid}`;
      const script = `(echo pwned > ${hostFile}) 2>/dev/null; node probe.cjs 6379 ${ports.api} ${ports.other} ${ports.model}; id -u > uid.txt`;
      const mission = commandMission(f, script, {
        mission_id: 'm-egress',
        sandbox: { egress: [`127.0.0.1:${ports.model}`] },
        scope: { allowed_change_globs: ['net.json', 'uid.txt'] },
        verification: [REDIS_REFUSED_CHECK],
      });
      const before = fleetBaseline(f);
      const hitsBefore = { ...hits };
      const { receipt, operationDir } = await runMission(f, mission);
      const patch = readFileSync(join(operationDir, 'diff.patch'), 'utf8');
      const net = JSON.parse(addedTo(patch, 'net.json')) as Record<string, string>;
      expect(net.redis_direct).toBe('error: ECONNREFUSED');
      expect(net.api_direct).toBe('error: ECONNREFUSED');
      expect(net.other_direct).toBe('error: ECONNREFUSED');
      for (const key of ['redis_proxy', 'api_proxy', 'other_proxy', 'metadata_proxy'])
        expect(net[key], key).toMatch(/^answered: HTTP\/1\.1 403/);
      expect(net.model_curl).toBe('200');
      expect(net.model_fetch).toBe('200');
      expect(hits.api - hitsBefore.api).toBe(0);
      expect(hits.other - hitsBefore.other).toBe(0);
      expect(hits.model - hitsBefore.model).toBe(2);
      expect(addedTo(patch, 'uid.txt')).toBe(String(agentUid(f)));
      // The untampered verdict: the check (Redis unreachable from it too) passes, nothing out of scope.
      expect(receipt.scope.violations).toEqual([]);
      expect(receipt.verdict).toBe('verified');
      expect(receipt.isolation).toMatchObject({ kind: 'bwrap', network: 'egress' });
      expect(receipt.isolation.egress.refused).toEqual(
        expect.arrayContaining(['127.0.0.1:6379 (not allowed)', `127.0.0.1:${ports.api} (not allowed)`]),
      );
      expect(existsSync(hostFile)).toBe(false);
      expect(fleetBaseline(f)).toEqual(before);
      expect(poolPristine(f)).toBe(true);
    }, 60_000);
  });
});

describe('egress: a name on the transparent path', () => {
  it("resolves, inside, to the forwarder of the sandbox's /etc/hosts and reaches the server the host resolves it to", async () => {
    // The machine's own name: the host resolves it (to a loopback or its own address), the sandbox
    // to 127.0.0.N; an exact entry names it, so the proxy admits it even when it is the host's loopback.
    let seen = 0;
    const server = createHttpServer((_req, res) => {
      seen++;
      res.end('named');
    });
    const port = await listen(server, '0.0.0.0');
    const name = hostname();
    const stateDir = tempDir('uh-egress-state-');
    created.push(stateDir);
    const script = `node -e "fetch('http://${name}:${port}/').then(r=>r.text()).then(t=>require('fs').writeFileSync('named.txt',t+'\\n')).catch(e=>require('fs').writeFileSync('named.txt','failed '+(e.cause&&e.cause.code)))" && getent hosts ${name} >> named.txt`;
    const { path } = hostileMission(repo, script, { sandbox: { egress: [`${name}:${port}`] } });
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home },
    });
    expect(r.code, r.stderr).toBe(0);
    const receipt = JSON.parse(r.stdout);
    const patch = readFileSync(join(stateDir, 'operations', receipt.operation_id, 'diff.patch'), 'utf8');
    expect(patch).toContain('+named\n');
    expect(patch).toMatch(new RegExp(`127\\.0\\.0\\.2\\s+${name}`));
    expect(seen).toBe(1);
    expect(receipt.isolation.egress.asked).toContain(`${name}:${port}`);
  });
});

describe('egress: the real codex in egress mode', () => {
  let server: ResponsesServer;
  let codexHome: string;
  const API_KEY = 'sk-uh-egress-codex-4d1c9e27';

  beforeAll(async () => {
    server = await startResponsesServer({ apiKey: API_KEY });
    codexHome = tempDir('uh-egress-codex-home-');
    created.push(codexHome);
    writeFileSync(
      join(codexHome, 'config.toml'),
      `model = "uh-scripted"\nmodel_provider = "uhmock"\n[model_providers.uhmock]\nname = "uh scripted"\nbase_url = "${server.url}"\nwire_api = "responses"\nenv_key = "UH_MOCK_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n`,
    );
  });
  afterAll(async () => {
    await server?.close();
  });

  it('reaches the model endpoint its config.toml names (declared by the adapter) and nothing else', async () => {
    await server.script([
      {
        kind: 'function_call',
        name: 'exec_command',
        arguments: { cmd: "printf 'hi from codex\\n' > hello.txt" },
        call_id: 'call_1',
      },
      { kind: 'message', text: 'Done.\n\n```uh-runtime-final-message\nCreated hello.txt.\n```\n' },
    ]);
    const stateDir = tempDir('uh-egress-state-');
    created.push(stateDir);
    const path = join(tempDir('uh-egress-mission-'), 'mission.yaml');
    writeFileSync(
      path,
      stringify({
        schema_version: 'uh.mission.v0',
        mission_id: 'm-egress-codex',
        operation_id: `op-egress-codex-${process.pid}`,
        title: 'Create hello.txt',
        objective: 'Create hello.txt containing a greeting.',
        repository: { url: repo, ref: 'main' },
        runtime: 'codex',
        runtime_config_overrides: {
          codex: {
            binary: realRuntimeBinary('codex'),
            codex_home: codexHome,
            env: { UH_MOCK_API_KEY: API_KEY },
            network_wait_ms: 0,
          },
        },
        scope: { allowed_change_globs: ['hello.txt'] },
        // The checks get the mission's sandbox.egress only (none here): the runtime's endpoint is not theirs.
        verification: [
          {
            name: 'model-endpoint-refused',
            argv: ['node', '-e', `fetch('${server.url}/models').then(()=>process.exit(1),()=>process.exit(0))`],
            timeout_seconds: 30,
          },
        ],
        timeout_seconds: 120,
      }),
    );
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home },
    });
    const receipt = JSON.parse(r.stdout);
    expect(receipt.status, r.stderr).toBe('completed');
    expect(receipt.verdict).toBe('verified');
    expect(receipt.changed_files.map((f: { path: string }) => f.path)).toEqual(['hello.txt']);
    expect(receipt.isolation).toMatchObject({ kind: 'bwrap', network: 'egress' });
    const host = new URL(server.url).host;
    expect(receipt.isolation.egress.allowed).toContain(host);
    expect(receipt.isolation.egress.refused.filter((h: string) => h.startsWith(host))).toEqual([]);
  });
});
