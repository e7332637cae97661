/**
 * Teams on the HTTP API (docs/security.md, "Teams"): tokens from a tokens file (SHA-256 hashes,
 * each with a tenant and scopes) are refused outside their scope on every route (403, the table
 * below: each scope × each route), a tenant sees only its own operations (another tenant's are
 * 404 on get, artifacts, events and cancel; lists filtered; the dashboard's session too), the
 * tenant comes from the token and never from the body, and every request leaves one access log
 * line naming the token id and tenant, never the token.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { loadConfig } from '../../src/shared/config.js';
import type { Logger } from '../../src/shared/logger.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';

const ADMIN = 'admin-token-0123456789abcdef-0123456789';
const TOKENS = {
  'a-read': { tenant: 'team-a', scopes: ['read'] },
  'a-submit': { tenant: 'team-a', scopes: ['submit'] },
  'a-cancel': { tenant: 'team-a', scopes: ['cancel'] },
  'a-promote': { tenant: 'team-a', scopes: ['promote'] },
  'a-ci': { tenant: 'team-a', scopes: ['read', 'submit', 'cancel'] },
  'b-ci': { tenant: 'team-b', scopes: ['read', 'submit', 'cancel'] },
} as const;
/** Each token's secret: known to this test only; the file holds its hash. */
const secret = (id: string) => `tok-${id}-${'s'.repeat(32)}`;
const bearer = (id: string) => ({ authorization: `Bearer ${id === 'admin' ? ADMIN : secret(id)}` });

let redis: TestRedis;
let repo: string;
let client: QueueClient;
let app: FastifyInstance;
let base = '';
const dirs: string[] = [];
const access: Array<Record<string, unknown>> = [];

/** The access log as the server writes it (one object per line). */
const accessLog: Logger = {
  debug() {},
  info(obj) {
    if (typeof obj === 'object') access.push(JSON.parse(JSON.stringify(obj)) as Record<string, unknown>);
  },
  warn() {},
  error() {},
  child() {
    return accessLog;
  },
};

beforeAll(async () => {
  redis = await startTestRedis('tenants-api');
  repo = makeRepo({ 'README.md': '# tenants\n' });
  dirs.push(repo, tempDir('uh-ten-state-'), tempDir('uh-ten-cache-'), tempDir('uh-ten-etc-'));
  const file = join(dirs[3] as string, 'tokens.yaml');
  const entries = Object.entries(TOKENS).map(([id, t]) => ({
    id,
    ...t,
    sha256: createHash('sha256').update(secret(id)).digest('hex'),
  }));
  writeFileSync(file, JSON.stringify({ tokens: entries }, null, 2));
  client = await QueueClient.open(
    loadConfig({ UH_REDIS_PREFIX: redis.prefix('api'), UH_CACHE_DIR: dirs[2] as string }).queue,
    redis.url,
  );
  app = await buildApiServer({
    client,
    config: readApiConfig({ UH_API_TOKEN: ADMIN, UH_API_TOKENS_FILE: file, UH_TENANT: 'ops' }, '127.0.0.1'),
    stateDir: dirs[1] as string,
    cacheDir: dirs[2] as string,
    baseDir: repo,
    repositoryPolicy: { allowLocal: true, allowHttp: false },
    prices: {},
    receiptKey: { key: 'k'.repeat(32), keyFile: '/nonexistent/receipt.key' },
    promotionIdentity: { author: { name: 'T', email: 't@localhost' }, committer: { name: 'T', email: 't@localhost' } },
    accessLog,
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
}, 60_000);

afterAll(async () => {
  app?.server.closeAllConnections();
  await app?.close();
  await client?.close();
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

function mission(operationId: string, extra: Record<string, unknown> = {}) {
  return {
    schema_version: 'uh.mission.v0',
    mission_id: 'tenants',
    operation_id: operationId,
    title: 'Tenants',
    objective: 'Nothing',
    repository: { url: repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['true'] } },
    ...extra,
  };
}

async function call(token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token ? bearer(token) : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: controller.signal,
  });
  // An event stream stays open: its status is what the table asks.
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    controller.abort();
    return { status: res.status, headers: res.headers, text: '' };
  }
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Poll the access log until a line for this request id arrived (it is written when the response closes). */
async function accessLine(requestId: string | null): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const line = access.find((l) => l.request_id === requestId);
    if (line) return line;
    if (Date.now() > deadline) throw new Error(`no access log line for ${requestId}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every route and the scope it needs; `nope` ids answer 404 (or 400 for bad bodies) once the scope is held. */
const ROUTES: Array<{ method: string; path: string; route: string; scope: string; body?: unknown }> = [
  { method: 'GET', path: '/v1/operations', route: '/v1/operations', scope: 'read' },
  { method: 'GET', path: '/v1/operations/nope', route: '/v1/operations/:id', scope: 'read' },
  { method: 'GET', path: '/v1/operations/nope/receipt', route: '/v1/operations/:id/receipt', scope: 'read' },
  { method: 'GET', path: '/v1/operations/nope/diff', route: '/v1/operations/:id/diff', scope: 'read' },
  {
    method: 'GET',
    path: '/v1/operations/nope/final-message',
    route: '/v1/operations/:id/final-message',
    scope: 'read',
  },
  { method: 'GET', path: '/v1/operations/nope/events', route: '/v1/operations/:id/events', scope: 'read' },
  { method: 'GET', path: '/v1/receipt-key', route: '/v1/receipt-key', scope: 'read' },
  { method: 'GET', path: '/v1/workers', route: '/v1/workers', scope: 'read' },
  { method: 'GET', path: '/v1/queues', route: '/v1/queues', scope: 'read' },
  { method: 'GET', path: '/v1/batches', route: '/v1/batches', scope: 'read' },
  { method: 'GET', path: '/v1/batches/nope', route: '/v1/batches/:id', scope: 'read' },
  { method: 'GET', path: '/v1/batches/nope/report.html', route: '/v1/batches/:id/report.html', scope: 'read' },
  { method: 'GET', path: '/openapi.json', route: '/openapi.json', scope: 'read' },
  { method: 'POST', path: '/v1/missions', route: '/v1/missions', scope: 'submit', body: {} },
  { method: 'POST', path: '/v1/batches', route: '/v1/batches', scope: 'submit', body: {} },
  { method: 'POST', path: '/v1/operations/nope/cancel', route: '/v1/operations/:id/cancel', scope: 'cancel' },
  {
    method: 'POST',
    path: '/v1/operations/nope/promote',
    route: '/v1/operations/:id/promote',
    scope: 'promote',
    body: {},
  },
  {
    method: 'POST',
    path: '/v1/operations/nope/recover',
    route: '/v1/operations/:id/recover',
    scope: 'admin',
    body: {},
  },
  { method: 'GET', path: '/metrics', route: '/metrics', scope: 'admin' },
  { method: 'GET', path: '/admin/queues/', route: '/admin/queues/', scope: 'admin' },
  { method: 'GET', path: '/admin/queues/api/queues', route: '/admin/queues/api/queues', scope: 'admin' },
];
const SINGLE: Array<{ token: string; scope: string }> = [
  { token: 'a-read', scope: 'read' },
  { token: 'a-submit', scope: 'submit' },
  { token: 'a-cancel', scope: 'cancel' },
  { token: 'a-promote', scope: 'promote' },
  { token: 'admin', scope: 'admin' },
];
const TABLE = ROUTES.flatMap((r) =>
  SINGLE.map((t) => ({ ...r, ...t, allowed: t.scope === 'admin' || t.scope === r.scope })),
);

describe('scopes: each scope × each route', () => {
  it.each(TABLE)('$token $method $path: allowed=$allowed', async ({ token, method, path, body, allowed, route }) => {
    const res = await call(token, method, path, body);
    if (allowed) expect([401, 403], `${res.status}`).not.toContain(res.status);
    else {
      expect(res.status).toBe(403);
      expect((JSON.parse(res.text) as { error: { message: string } }).error.message).toContain(
        `token "${token === 'admin' ? 'api-token' : token}" lacks the`,
      );
    }
    const line = await accessLine(res.headers.get('x-request-id'));
    expect(line).toMatchObject({
      method,
      path,
      status: res.status,
      token_id: token === 'admin' ? 'api-token' : token,
      tenant: token === 'admin' ? 'ops' : 'team-a',
    });
    // bull-board's own routes have its patterns; ours are named as declared.
    if (!path.startsWith('/admin/')) expect(line.route).toBe(route);
    expect(typeof line.duration_ms).toBe('number');
  });

  it('no token, a wrong one, or a removed one: 401 with an access line naming no token', async () => {
    for (const headers of [{}, { authorization: 'Bearer not-a-token-0123456789' }] as Array<Record<string, string>>) {
      const res = await fetch(`${base}/v1/operations`, { headers });
      expect(res.status).toBe(401);
      const line = await accessLine(res.headers.get('x-request-id'));
      expect(line).toMatchObject({ status: 401, token_id: null, tenant: null, route: '/v1/operations' });
    }
    expect(JSON.stringify(access)).not.toContain(secret('a-read'));
    expect(JSON.stringify(access)).not.toContain(ADMIN);
  });
});

describe('tenant isolation', () => {
  beforeAll(async () => {
    // The body cannot choose the tenant: a mission has no such field (strict schema: 400).
    const forged = await call('b-ci', 'POST', '/v1/missions', { ...mission('forged'), tenant: 'team-a' });
    expect(forged.status).toBe(400);
    expect((await call('a-ci', 'POST', '/v1/missions', mission('a-op-1'))).status).toBe(201);
    expect((await call('b-ci', 'POST', '/v1/missions', mission('b-op-1', { priority: 'ci' }))).status).toBe(201);
  });

  it('records the token’s tenant on the operation and the mission’s priority on the job', async () => {
    expect((await client.store.get('a-op-1'))?.tenant).toBe('team-a');
    expect((await client.store.get('b-op-1'))?.tenant).toBe('team-b');
    const queue = await client.queue('command');
    // CI goes to the front of the wait list; both stay in it (what KEDA and the queue-age metric count).
    expect((await queue.getJob('op.b-op-1'))?.opts.lifo).toBe(true);
    expect((await queue.getJob('op.a-op-1'))?.opts.lifo).toBeUndefined();
    expect(await queue.getJobCounts('wait', 'prioritized')).toEqual({ wait: 2, prioritized: 0 });
  });

  it('another tenant’s operation is 404 on get, artifacts, events and cancel; lists are filtered', async () => {
    for (const [method, path] of [
      ['GET', '/v1/operations/a-op-1'],
      ['GET', '/v1/operations/a-op-1/receipt'],
      ['GET', '/v1/operations/a-op-1/diff'],
      ['GET', '/v1/operations/a-op-1/events'],
      ['POST', '/v1/operations/a-op-1/cancel'],
    ] as const) {
      const res = await call('b-ci', method, path);
      expect(res.status, `${method} ${path}`).toBe(404);
      // Word for word the answer for an id that does not exist: nothing tells them apart.
      const unknown = await call('b-ci', method, path.replace('a-op-1', 'a-op-0'));
      expect(unknown.status).toBe(404);
    }
    expect((await call('a-ci', 'GET', '/v1/operations/a-op-1')).status).toBe(200);
    const ids = async (token: string) =>
      (
        (await (await fetch(`${base}/v1/operations`, { headers: bearer(token) })).json()) as {
          operations: Array<{ operation_id: string; tenant: string }>;
        }
      ).operations.map((o) => `${o.tenant}/${o.operation_id}`);
    expect(await ids('a-ci')).toEqual(['team-a/a-op-1']);
    expect(await ids('b-ci')).toEqual(['team-b/b-op-1']);
    expect(await ids('admin')).toEqual(['team-b/b-op-1', 'team-a/a-op-1']);
    // The same id under another tenant is a conflict, never an attach to the other tenant's run.
    expect((await call('b-ci', 'POST', '/v1/missions', mission('a-op-1'))).status).toBe(409);
    // Cancel works for the owner.
    expect((await call('a-ci', 'POST', '/v1/operations/a-op-1/cancel')).status).toBe(202);
  });

  it('the dashboard session is the token’s: the same tenant filter and 404s', async () => {
    const login = await fetch(`${base}/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: secret('b-ci') }),
    });
    expect(login.status).toBe(204);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    expect(cookie).toMatch(/^uh_session=b-ci\.[0-9a-f]{64}$/);
    expect(cookie).not.toContain(secret('b-ci'));
    const list = (await (await fetch(`${base}/v1/operations`, { headers: { cookie } })).json()) as {
      operations: Array<{ operation_id: string }>;
    };
    expect(list.operations.map((o) => o.operation_id)).toEqual(['b-op-1']);
    expect((await fetch(`${base}/v1/operations/a-op-1`, { headers: { cookie } })).status).toBe(404);
    expect((await fetch(`${base}/v1/operations/b-op-1`, { headers: { cookie } })).status).toBe(200);
    // bull-board shows every tenant's jobs: admin only, with the cookie too.
    expect((await fetch(`${base}/admin/queues/api/queues`, { headers: { cookie } })).status).toBe(403);
    // A forged cookie for another token id does not verify.
    const forged = cookie.replace('uh_session=b-ci.', 'uh_session=a-ci.');
    expect((await fetch(`${base}/v1/operations`, { headers: { cookie: forged } })).status).toBe(401);
  });
});

describe('the tokens file', () => {
  const errorOf = (content: string): string => {
    const file = join(dirs[3] as string, `bad-${Math.random()}.yaml`);
    writeFileSync(file, content);
    try {
      readApiConfig({ UH_API_TOKENS_FILE: file }, '127.0.0.1');
      return '';
    } catch (error) {
      const e = error as Error & { details?: string[] };
      return [e.message, ...(e.details ?? [])].join('\n');
    }
  };
  const hash = 'a'.repeat(64);

  it('is parsed at start-up; each error names the bad entry', () => {
    expect(
      errorOf(
        `tokens:\n  - {id: ok, tenant: t, scopes: [read], sha256: ${hash}}\n  - {id: bad, tenant: t, scopes: [write], sha256: ${hash.replace(/a/g, 'b')}}\n`,
      ),
    ).toMatch(/tokens\[1\] \(id "bad"\) is invalid[\s\S]*tokens\[1\] \(id "bad"\)\.scopes\.0: /);
    expect(errorOf(`tokens:\n  - {id: raw, tenant: t, scopes: [read], token: hunter2}\n`)).toMatch(
      /tokens\[0\] \(id "raw"\)/,
    );
    expect(errorOf(`tokens:\n  - {id: short, tenant: t, scopes: [read], sha256: abc}\n`)).toMatch(
      /tokens\[0\] \(id "short"\)\.sha256: the SHA-256 of the token as 64 hex digits/,
    );
    expect(
      errorOf(
        `tokens:\n  - {id: x, tenant: t, scopes: [read], sha256: ${hash}}\n  - {id: y, tenant: t, scopes: [read], sha256: ${hash}}\n`,
      ),
    ).toMatch(/tokens\[1\] \(id "y"\) repeats the sha256 of tokens\[0\]/);
    expect(errorOf('nope: 1\n')).toMatch(/expected \{tokens: \[entries…\]\}/);
    // A file alone is enough: no UH_API_TOKEN needed.
    expect(errorOf(`tokens:\n  - {id: x, tenant: t, scopes: [read], sha256: ${hash}}\n`)).toBe('');
  });
});
