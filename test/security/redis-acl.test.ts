/**
 * The fleet's Redis ACL (`uh deploy redis-acl`, the file the deploy files start Redis with) on a
 * real `redis-server` on a free loopback port: each role, connected as its own user with its
 * password from a file (UH_REDIS_PASSWORD_FILE), does its real job (a producer submits and waits,
 * a runtime worker runs a `command` mission, the results worker consumes the completion, the API
 * serves it, its workers and bull-board) with no command refused, and nothing else: no role reads
 * or writes another fleet's prefix, none flushes, lists keys or reconfigures the server, only the
 * results worker consumes the outbox, and the anonymous user is refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { REDIS_ROLES, redisUserName, type RedisRole } from '../../src/shared/queue/redis-acl.js';
import { runCli, UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

const FLEET = `acl-${process.pid}`;
const OTHER = `acl-other-${process.pid}`;
const ADMIN_PASSWORD = 'acl-test-admin-password-5be1c9';
const TOKEN = 'redis-acl-api-token-0123456789abcdef';
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
let server: ChildProcess;
let api: ChildProcess | undefined;
let port: number;
let secrets: string;
let fleetKey: string;
let admin: Redis;
const clients: Redis[] = [];

const dir = (p: string) => (dirs.push(tempDir(p)), dirs[dirs.length - 1] as string);
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

/** The fleet's one artifact store: every role's process names it (docs/deploy.md "Artifact store"). */
const artifacts = dir('uh-acl-artifacts-');

/** The environment of a uh process of `role`: a URL naming only the user, the password in a file. */
function roleEnv(role: RedisRole, cacheDir: string): Record<string, string> {
  return {
    // One fleet key: the runtime worker signs, every role verifies.
    ...(role === 'worker' ? { UH_RECEIPT_SIGNING_KEY_FILE: join(fleetKey, 'receipt-signing.pem') } : {}),
    UH_RECEIPT_PUBLIC_KEYS: join(fleetKey, 'receipt-signing.pub'),
    REDIS_URL: `redis://${FLEET}-${role}@127.0.0.1:${port}`,
    UH_REDIS_PASSWORD_FILE: join(secrets, role),
    UH_REDIS_PREFIX: FLEET,
    UH_CACHE_DIR: cacheDir,
    UH_ARTIFACT_STORE: `dir:${artifacts}`,
    UH_ISOLATION: 'off',
  };
}

async function connectAs(prefix: string, role: RedisRole): Promise<Redis> {
  const dirOf = prefix === FLEET ? secrets : join(secrets, 'other');
  const password = readFileSync(join(dirOf, role), 'utf8').trim();
  const r = new Redis({ port, host: '127.0.0.1', username: `${prefix}-${role}`, password, lazyConnect: true });
  r.on('error', () => undefined);
  await r.connect();
  clients.push(r);
  return r;
}

beforeAll(async () => {
  port = await freePort();
  secrets = dir('uh-acl-secrets-');
  const aclFile = join(secrets, 'users.acl');
  const cwd = dir('uh-acl-cwd-');
  fleetKey = join(dir('uh-acl-key-'), 'fleet');
  expect((await runCli(['receipt', 'key', '--generate', fleetKey], { cwd })).code).toBe(0);
  const made = await runCli(
    ['deploy', 'redis-acl', '--passwords', secrets, '--generate', '--prefix', FLEET, '--out', aclFile],
    { cwd },
  );
  expect(made.code, made.stderr).toBe(0);
  // Another fleet on the same Redis: its own users and passwords; the default line once.
  const other = await runCli(
    ['deploy', 'redis-acl', '--passwords', join(secrets, 'other'), '--generate', '--prefix', OTHER],
    { cwd },
  );
  expect(other.code, other.stderr).toBe(0);
  const otherUsers = other.stdout.split('\n').filter((l) => l.startsWith(`user ${OTHER}-`));
  // The test's own eyes: an admin user that can see everything (never one of the fleet's roles).
  appendFileSync(aclFile, `${otherUsers.join('\n')}\nuser acl-test-admin on >${ADMIN_PASSWORD} ~* &* +@all\n`);
  server = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      secrets,
      '--aclfile',
      aclFile,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  server.stdout?.on('data', (c) => (out += c));
  expect(await waitFor(() => out.includes('Ready to accept connections'), 10_000), out).toBe(true);
  admin = new Redis({ port, host: '127.0.0.1', username: 'acl-test-admin', password: ADMIN_PASSWORD });
  // The other fleet's data: a record, an outbox entry.
  await admin.hset(`{${OTHER}}:op:theirs`, 'state', 'queued', 'payload', '{"secret":"theirs"}');
  await admin.xadd(`{${OTHER}}:outbox`, '*', 'completion', '{}');
  await admin.acl('LOG', 'RESET');
}, 30_000);

afterAll(async () => {
  api?.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.stop()));
  clients.forEach((c) => c.disconnect());
  admin?.disconnect();
  server?.kill('SIGTERM');
  dirs.forEach(removeDir);
});

async function startApi(env: Record<string, string>): Promise<string> {
  api = spawn(process.execPath, [UH_BIN, 'api', 'start', '--port', '0', '--state-dir', dir('uh-acl-api-')], {
    cwd: secrets,
    env: { ...process.env, ...env, UH_LOG_LEVEL: 'silent', UH_API_TOKEN: TOKEN },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const child = api;
  return new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (c: Buffer) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('close', (code) => reject(new Error(`api exited ${code}: ${out}`)));
  });
}

describe('the generated ACL file', () => {
  it('stores no password in clear and turns the anonymous user off', async () => {
    const acl = readFileSync(join(secrets, 'users.acl'), 'utf8');
    for (const role of REDIS_ROLES) expect(acl).not.toContain(readFileSync(join(secrets, role), 'utf8').trim());
    expect(statSync(join(secrets, 'worker')).mode & 0o077).toBe(0);
    const anonymous = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    anonymous.on('error', () => undefined);
    clients.push(anonymous);
    await anonymous.connect().catch(() => undefined);
    await expect(anonymous.get(`{${FLEET}}:ops`)).rejects.toThrow(/NOAUTH/);
    // uh doctor, as the API's user: Redis answers it, and refuses a client without a password.
    const doctor = await runCli(['doctor', '--json'], { cwd: secrets, env: roleEnv('api', dir('uh-acl-doc-')) });
    const findings = JSON.parse(doctor.stdout).findings as Array<{ what: string }>;
    expect(findings.find((f) => f.what === 'redis')).toMatchObject({ ok: true });
    expect(findings.find((f) => f.what === 'redis auth')).toMatchObject({
      ok: true,
      detail: 'refuses clients without a password',
    });
    expect(doctor.stdout).not.toContain(readFileSync(join(secrets, 'api'), 'utf8').trim());
  });
});

describe('each role does its job as its own ACL user', () => {
  it('submit → run → settle → serve, and Redis refused no command of any role', async () => {
    const repo = makeRepo({ 'README.md': '# acl\n' });
    dirs.push(repo);
    const stateDir = dir('uh-acl-state-');
    const cache = dir('uh-acl-cache-');
    workers.push(
      await startWorker(['--runtime', 'command', '--state-dir', stateDir], {
        cwd: stateDir,
        env: roleEnv('worker', cache),
      }),
    );
    const results = await startWorker(['--results', '--state-dir', stateDir], {
      cwd: stateDir,
      env: roleEnv('results', cache),
    });
    workers.push(results);
    const base = await startApi({ ...roleEnv('api', dir('uh-acl-apic-')), UH_ALLOW_LOCAL_REPOS: '1' });

    const mission = writeMission(repo, ['edit', 'README.md', '# changed\n'], {
      verification: [{ name: 'ok', argv: ['true'], timeout_seconds: 30 }],
    });
    const submitted = await runCli(['mission', 'submit', mission.path, '--wait', '--json'], {
      cwd: repo,
      env: roleEnv('producer', dir('uh-acl-pc-')),
    });
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(JSON.parse(submitted.stdout)).toMatchObject({ verdict: 'verified', operation_id: mission.operationId });

    // The results worker consumed the completion: nothing pending, nothing left to read in its group.
    const consumed = async () => {
      const groups = (await admin.xinfo('GROUPS', `{${FLEET}}:outbox`)) as unknown[][];
      const g = groups.map((row) =>
        Object.fromEntries(Array.from({ length: row.length / 2 }, (_, i) => [row[2 * i], row[2 * i + 1]])),
      );
      return g.some((x) => x.name === 'results' && x.pending === 0 && x.lag === 0);
    };
    expect(await waitFor(consumed, 20_000, 100), results.output()).toBe(true);

    const auth = { authorization: `Bearer ${TOKEN}` };
    const op = await fetch(`${base}/v1/operations/${mission.operationId}`, { headers: auth });
    expect(op.status).toBe(200);
    expect(JSON.stringify(await op.json())).toContain('"verified"');
    const fleet = await fetch(`${base}/v1/workers`, { headers: auth });
    expect(fleet.status).toBe(200);
    expect(((await fleet.json()) as { workers: unknown[] }).workers.length).toBeGreaterThan(0);
    const board = await fetch(`${base}/admin/queues/api/queues?activeQueue=runtime.command&status=completed&page=1`, {
      headers: auth,
    });
    expect(board.status).toBe(200);
    // The completed job left Redis at once (the record is the truth): the board reads the queue.
    const queues = ((await board.json()) as { queues: Array<{ name: string }> }).queues;
    expect(queues.map((q) => q.name)).toContain('runtime.command');

    // A cancel from the producer's user (publish on the fleet's channel, settle script) works too.
    const cancelled = await runCli(['mission', 'cancel', 'op-never-submitted'], {
      cwd: repo,
      env: roleEnv('producer', dir('uh-acl-pc2-')),
    });
    expect(cancelled.stderr).not.toMatch(/NOPERM/);

    const log = (await admin.acl('LOG')) as unknown[][];
    const denied = log.map((row) =>
      Object.fromEntries(Array.from({ length: row.length / 2 }, (_, i) => [row[2 * i], row[2 * i + 1]])),
    );
    // The one refusal: bull-board asks for CLIENT LIST (every client of the server, other fleets'
    // too) for its worker panel and shows none; the API's /v1/workers reads the heartbeats instead.
    const refused = denied.filter((d) => String(d.username).startsWith(FLEET)).map((d) => `${d.username} ${d.object}`);
    expect([...new Set(refused)]).toEqual([`${FLEET}-api client|list`]);
  }, 120_000);
});

describe('shared adapter manifests (uh adapter publish)', () => {
  it('the producer and the API publish; the workers read them and cannot publish', async () => {
    const file = join(dir('uh-acl-man-'), 'acl-cmd.yaml');
    const manifest = (version: string) =>
      `schema_version: uh.adapter.v0\nid: acl-cmd\nname: acl\nversion: ${version}\nruntime_kind: command\nruntime_config: { argv: ['true'] }\n`;
    const digests: string[] = [];
    for (const [role, version] of [
      ['producer', '1.0.0'],
      ['api', '1.0.1'],
    ] as const) {
      writeFileSync(file, manifest(version));
      const r = await runCli(['adapter', 'publish', file, '--json'], {
        cwd: secrets,
        env: roleEnv(role, dir('uh-acl-mc-')),
      });
      expect(r.code, `${role}: ${r.stderr}`).toBe(0);
      digests.push(JSON.parse(r.stdout).digest);
    }
    for (const role of ['worker', 'results'] as const) {
      const r = await connectAs(FLEET, role);
      expect(JSON.parse((await r.hget(`{${FLEET}}/adapters`, 'acl-cmd')) as string).digest, role).toBe(digests[1]);
      expect((await r.hkeys(`{${FLEET}}/adapters:versions`)).length, role).toBe(2);
      writeFileSync(file, manifest(`9.9.9-${role}`));
      const refused = await runCli(['adapter', 'publish', file], {
        cwd: secrets,
        env: roleEnv(role, dir('uh-acl-mc-')),
      });
      expect(refused.code, role).not.toBe(0);
      expect(refused.stderr, role).toMatch(/NOPERM/);
    }
    expect(JSON.parse((await admin.hget(`{${FLEET}}/adapters`, 'acl-cmd')) as string).digest).toBe(digests[1]);
  }, 60_000);
});

/** [role, what, command…]: every row must be refused with NOPERM. */
const OTHER_KEY = `{${OTHER}}:op:theirs`;
const EVERY_ROLE: Array<[string, string[]]> = [
  ["read another fleet's record", ['hgetall', OTHER_KEY]],
  ["write another fleet's outbox", ['xadd', `{${OTHER}}:outbox`, '*', 'completion', '{"forged":true}']],
  ["read another fleet's record inside a script", ['eval', `return redis.call('hgetall', '${OTHER_KEY}')`, '0']],
  ["declare another fleet's key to a script", ['eval', 'return 1', '1', OTHER_KEY]],
  ["publish on another fleet's cancel channel", ['publish', `{${OTHER}}:cancel`, 'theirs']],
  ["read another fleet's adapter manifests", ['hgetall', `{${OTHER}}/adapters`]],
  ['FLUSHALL', ['flushall']],
  ['FLUSHDB', ['flushdb']],
  ['KEYS', ['keys', '*']],
  ['RANDOMKEY', ['randomkey']],
  ['CONFIG SET', ['config', 'set', 'appendonly', 'no']],
  ['ACL SETUSER', ['acl', 'setuser', 'intruder', 'on', '>x', '~*', '+@all']],
  ['ACL LIST', ['acl', 'list']],
  ['CLIENT LIST', ['client', 'list']],
  ['CLIENT KILL', ['client', 'kill', 'type', 'normal']],
  ['SAVE', ['save']],
  ['SWAPDB', ['swapdb', '0', '1']],
  ['REPLICAOF', ['replicaof', '127.0.0.1', '1']],
  ['SHUTDOWN', ['shutdown', 'nosave']],
  ['MONITOR', ['monitor']],
  ['SELECT another database', ['select', '1']],
  ['FUNCTION LOAD', ['function', 'load', "#!lua name=x\nredis.register_function('x', function() return 1 end)"]],
  ['SCRIPT FLUSH', ['script', 'flush']],
  ['PUBSUB CHANNELS', ['pubsub', 'channels']],
  ['SORT … GET (reads other keys)', ['sort', `{${FLEET}}:ops`, 'by', 'nosort', 'get', `{${OTHER}}:*`]],
];
const BY_ROLE: Record<RedisRole, Array<[string, string[]]>> = {
  producer: [
    ['consume the outbox', ['xreadgroup', 'group', 'results', 'p', 'count', '1', 'streams', `{${FLEET}}:outbox`, '>']],
    ['ack a completion', ['xack', `{${FLEET}}:outbox`, 'results', '0-1']],
    ['delete a record', ['del', `{${FLEET}}:op:x`]],
  ],
  worker: [
    ['consume the outbox', ['xreadgroup', 'group', 'results', 'w', 'count', '1', 'streams', `{${FLEET}}:outbox`, '>']],
    ['ack a completion', ['xack', `{${FLEET}}:outbox`, 'results', '0-1']],
    ['take over the outbox group', ['xgroup', 'setid', `{${FLEET}}:outbox`, 'results', '$']],
    ['publish an adapter manifest', ['hset', `{${FLEET}}/adapters`, 'x', '{}']],
    ['rewrite a published version', ['hset', `{${FLEET}}/adapters:versions`, 'x@sha256:0', '{}']],
  ],
  results: [
    ['publish an adapter manifest', ['hset', `{${FLEET}}/adapters`, 'x', '{}']],
    ['drop the published manifests', ['unlink', `{${FLEET}}/adapters`]],
  ],
  api: [
    ['consume the outbox', ['xreadgroup', 'group', 'results', 'a', 'count', '1', 'streams', `{${FLEET}}:outbox`, '>']],
    ['claim pending completions', ['xautoclaim', `{${FLEET}}:outbox`, 'results', 'a', '0', '0']],
    ['delete a record', ['unlink', `{${FLEET}}:op:x`]],
  ],
};
const ROWS = REDIS_ROLES.flatMap((role) =>
  [...EVERY_ROLE, ...BY_ROLE[role]].map(([what, argv]) => [role, what, argv] as const),
);

describe('and nothing else', () => {
  it.each(ROWS)('%s cannot %s', async (role, _what, argv) => {
    const r = await connectAs(FLEET, role);
    const [command, ...args] = argv as [string, ...string[]];
    // NOPERM, or inside a script "can't access at least one of the keys".
    await expect(r.call(command, ...args)).rejects.toThrow(/NOPERM|can't access/);
  });

  it('the other fleet was not touched, and its own users cannot reach this fleet', async () => {
    expect(await admin.hget(OTHER_KEY, 'payload')).toBe('{"secret":"theirs"}');
    expect(await admin.xlen(`{${OTHER}}:outbox`)).toBe(1);
    const theirs = await connectAs(OTHER, 'worker');
    await expect(theirs.hgetall(`{${FLEET}}:ops`)).rejects.toThrow(/NOPERM/);
    expect(await theirs.hget(OTHER_KEY, 'state')).toBe('queued');
  });
});

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The role a deployed service plays, by its name. */
const roleOf = (name: string): RedisRole => (/api/.test(name) ? 'api' : /results/.test(name) ? 'results' : 'worker');
const userOf = (url: string) => decodeURIComponent(new URL(url.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1')).username);

describe('the deploy files', () => {
  it('start Redis with the ACL file and connect every service as its own role, the password from a secret', () => {
    const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
    const services = compose.services as Record<string, any>;
    const aclArg = services.redis.command[services.redis.command.indexOf('--aclfile') + 1];
    expect(services.redis.configs).toContainEqual({ source: 'redis-acl', target: aclArg });
    for (const [name, svc] of Object.entries(services).filter(([n]) => n !== 'redis')) {
      const role = roleOf(name);
      expect(userOf(svc.environment.REDIS_URL), name).toBe(redisUserName('uh', role));
      // Under the state dir, which every sandbox has masked (an agent runs as the worker's uid).
      expect(svc.environment.UH_REDIS_PASSWORD_FILE, name).toBe('/var/lib/uh/redis-password');
      expect(svc.secrets, name).toContainEqual({
        source: `redis-password-${role}`,
        target: '/var/lib/uh/redis-password',
      });
      expect(svc.environment.UH_REDIS_PASSWORD_FILE.startsWith(`${svc.environment.UH_STATE_DIR}/`), name).toBe(true);
    }
    for (const f of readdirSync(join(ROOT, 'infra/k8s')).filter((x) => x.endsWith('.yaml'))) {
      for (const d of parseAllDocuments(readFileSync(join(ROOT, 'infra/k8s', f), 'utf8')).map((x) => x.toJS())) {
        if (d.kind !== 'Deployment') continue;
        const pod = d.spec.template.spec;
        const env = Object.fromEntries(
          pod.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]),
        );
        expect(userOf(env.REDIS_URL), f).toBe(redisUserName('uh', roleOf(f)));
        const volume = pod.volumes.find((v: { name: string }) => v.name === 'redis-password');
        expect(volume.secret.items, f).toEqual([{ key: roleOf(f), path: 'password' }]);
        const mount = pod.containers[0].volumeMounts.find((m: { name: string }) => m.name === 'redis-password');
        expect(`${mount.mountPath}/password`, f).toBe(env.UH_REDIS_PASSWORD_FILE);
        expect(env.UH_REDIS_PASSWORD_FILE.startsWith(`${env.UH_STATE_DIR}/`), f).toBe(true);
      }
    }
    for (const f of readdirSync(join(ROOT, 'infra/systemd'))) {
      const unit = readFileSync(join(ROOT, 'infra/systemd', f), 'utf8');
      expect(unit, f).toContain(`Environment=UH_REDIS_PASSWORD_FILE=/var/lib/uh/redis/${roleOf(f)}\n`);
      expect(unit, f).toContain('Environment=UH_STATE_DIR=/var/lib/uh ');
    }
  });
});
