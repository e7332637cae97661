/**
 * The dashboard in a real browser (issue 15): Debian's chromium driven by playwright-core (never
 * a downloaded browser). A worker runs the `command` runtime with a script that waits on a gate
 * file, so a mission is running while the page looks at it. Screenshots go to test-artifacts/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { generateKeyPair } from '../../src/operation/receipt-keys.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { loadConfig } from '../../src/shared/config.js';
import { makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { forgeStoredArtifacts, storedArtifact } from '../support/stored-artifacts.js';
import { until } from '../support/sse-client.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

// This file's fake agents coordinate with the test through files outside their sandbox (pid, gate and
// counter files), which bubblewrap isolation hides by design; isolation itself is tested in test/security/.
process.env.UH_ISOLATION = 'off';

const TOKEN = 'dashboard-token-0123456789abcdef-012345';
const auth = { authorization: `Bearer ${TOKEN}` };
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'dashboard');
const HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">Fix & ship';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

let redis: TestRedis;
let worker: WorkerProcess;
let app: FastifyInstance;
let client: QueueClient;
let browser: Browser;
let base = '';
let gates = '';
const dirs: string[] = [];
const problems: string[] = [];

/** The agent: prints, waits for its gate file, then edits hello.txt. */
const AGENT = `
const fs = require('node:fs');
const gate = process.argv[2];
console.log('agent waiting for its gate');
const t = setInterval(() => {
  if (!fs.existsSync(gate)) return;
  clearInterval(t);
  fs.writeFileSync('hello.txt', 'hello from the agent\\n');
  console.log('agent wrote hello.txt');
}, 50);
`;

function mission(id: string, title: string) {
  return {
    schema_version: 'uh.mission.v0',
    mission_id: 'dash',
    operation_id: id,
    title,
    objective: 'Write hello.txt',
    repository: { url: dirs[0], ref: 'main' },
    runtime: 'command',
    verification: [
      {
        name: 'has-hello',
        argv: [process.execPath, '-e', "require('node:fs').accessSync('hello.txt'); console.log('hello.txt is there')"],
      },
    ],
    runtime_config_overrides: { command: { argv: [process.execPath, join(gates, 'agent.cjs'), join(gates, id)] } },
  };
}
const submit = async (id: string, title: string) => {
  const res = await fetch(`${base}/v1/missions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(mission(id, title)),
  });
  expect(res.status).toBe(201);
};
const stateOf = async (id: string) =>
  (
    (await (await fetch(`${base}/v1/operations/${id}`, { headers: auth })).json()) as {
      operation: { state: string; status: string | null };
    }
  ).operation;

async function text(page: Page, selector: string): Promise<string> {
  return (
    (await page
      .locator(selector)
      .first()
      .textContent({ timeout: 1000 })
      .catch(() => '')) ?? ''
  );
}
const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  redis = await startTestRedis('dashboard');
  dirs.push(
    makeRepo({ 'README.md': '# dashboard\n' }),
    tempDir('uh-state-'),
    tempDir('uh-cache-'),
    (gates = tempDir('uh-gates-')),
  );
  writeFileSync(join(gates, 'agent.cjs'), AGENT);
  const prefix = redis.prefix('dash');
  const fleet = generateKeyPair(join(gates, 'fleet-key')); // the worker signs, the API verifies with the public key
  worker = await startWorker(['--runtime', 'command', '--concurrency', '2', '--state-dir', dirs[1] as string], {
    cwd: dirs[0] as string,
    env: {
      REDIS_URL: redis.url,
      UH_REDIS_PREFIX: prefix,
      UH_CACHE_DIR: dirs[2],
      UH_RECEIPT_SIGNING_KEY_FILE: fleet.privateFile,
    },
  });
  client = await QueueClient.open(
    loadConfig({ UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: dirs[2] as string }).queue,
    redis.url,
  );
  app = await buildApiServer({
    client,
    config: readApiConfig({ UH_API_TOKEN: TOKEN }, '127.0.0.1'),
    stateDir: dirs[1] as string,
    cacheDir: dirs[2] as string,
    baseDir: dirs[0] as string,
    repositoryPolicy: { allowLocal: true, allowHttp: false },
    prices: {},
    receiptKey: { key: undefined, keyFile: '/nonexistent/receipt.key', publicKeys: [fleet.publicFile] },
    promotionIdentity: { author: { name: 'T', email: 't@localhost' }, committer: { name: 'T', email: 't@localhost' } },
  });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  app?.server.closeAllConnections();
  await app?.close();
  await client?.close();
  await worker?.stop('SIGTERM');
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

async function openPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on('console', (m) => void (m.type() === 'error' && problems.push(`console: ${m.text()}`)));
  page.on('pageerror', (e) => void problems.push(`page error: ${e.message}`));
  page.on(
    'request',
    (r) =>
      void (!r.url().startsWith(base) && !r.url().startsWith('data:') && problems.push(`off-site request: ${r.url()}`)),
  );
  return page;
}

describe('dashboard in chromium', () => {
  it('asks for the token, then keeps it in an HttpOnly SameSite=Strict cookie only', async () => {
    const page = await openPage();
    await page.goto(`${base}/`);
    await page.locator('[data-testid=login]').waitFor();
    await page.fill('[data-testid=token]', 'wrong-token');
    await page.click('[data-testid=login] button');
    await until(async () => (await text(page, 'main')).includes('Wrong token'), 'the refusal');
    problems.splice(0); // the refused login is an expected 401 in the console
    await page.fill('[data-testid=token]', TOKEN);
    await page.click('[data-testid=login] button');
    await page.locator('[data-testid=filters]').waitFor();
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({ name: 'uh_session', httpOnly: true, sameSite: 'Strict' });
    expect(cookie?.value).not.toContain(TOKEN);
    expect(await page.content()).not.toContain(TOKEN);
    expect(await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie)).toBe(
      '',
    );
    // The cookie alone cannot change state: a cross-site form cannot add the dashboard header.
    const res = await fetch(`${base}/v1/operations/none/cancel`, {
      method: 'POST',
      headers: { cookie: `uh_session=${cookie?.value}` },
    });
    expect(res.status).toBe(401);
    await page.context().close();
  });

  it('lists a running mission (hostile title as text), streams its events live until it settles, renders the diff', async () => {
    await submit('dash-run', HOSTILE);
    const page = await openPage();
    await page.goto(`${base}/?token=${TOKEN}`);
    expect(page.url()).toBe(`${base}/`);
    const row = page.locator('tr[data-operation="dash-run"]');
    await until(
      async () => (await text(page, 'tr[data-operation="dash-run"]')).includes('running'),
      'the list to show dash-run running',
    );
    expect(await row.locator('.title').textContent()).toBe(HOSTILE);
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    await shot(page, '1-list-running');

    await row.locator('a').click();
    await until(async () => (await text(page, '[data-testid=stream-state]')) === 'live', 'the stream to open');
    await until(async () => (await page.locator('[data-testid=events] li').count()) >= 2, 'the events so far');
    const before = await page.locator('[data-testid=events] li').count();
    expect(await text(page, '[data-testid=op-title]')).toBe(HOSTILE);
    await shot(page, '2-operation-running');
    writeFileSync(join(gates, 'dash-run'), 'go');
    await until(
      async () => (await text(page, '[data-testid=stream-state]')) === 'settled',
      'the stream to end',
      60_000,
    );
    expect(await page.locator('[data-testid=events] li').count()).toBeGreaterThan(before); // arrived live on this page
    expect(await page.locator('[data-testid=events] li[data-type="operation.completed"]').count()).toBe(1);
    await page.locator('[data-testid=diff]').waitFor();
    expect(await page.locator('[data-testid=diff] .add').allTextContents()).toContain('+hello from the agent');
    expect(await text(page, '[data-testid=checks]')).toContain('has-hello');
    expect(await text(page, '[data-testid=check-output]')).toContain('hello.txt is there'); // the receipt's check output tail, not a worker path
    expect(await text(page, '[data-testid=receipt]')).toContain('"operation_id": "dash-run"');
    expect(await page.locator('[data-testid=signature]').getAttribute('data-state')).toBe('valid');
    expect(await text(page, '[data-testid=signature]')).toContain('signature valid');
    await page.locator('[data-testid=promote]').click(); // issue 18: promotion from the dashboard
    await page
      .locator('[data-testid=promote-outcome]')
      .filter({ hasText: 'branch uh/dash-run at' })
      .waitFor({ timeout: 30_000 });
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    await shot(page, '3-operation-settled');
    await page.context().close();
  }, 120_000);

  it('cancels a running mission from its page', async () => {
    await submit('dash-cancel', 'Wait forever');
    await until(async () => (await stateOf('dash-cancel')).state === 'running', 'dash-cancel running');
    const page = await openPage();
    await page.goto(`${base}/?token=${TOKEN}`);
    await page.goto(`${base}/#/op/dash-cancel`);
    await until(async () => (await text(page, '[data-testid=stream-state]')) === 'live', 'the stream to open');
    await page.click('[data-testid=cancel]');
    await until(
      async () => (await text(page, '[data-testid=stream-state]')) === 'settled',
      'the cancelled mission to settle',
      60_000,
    );
    expect(await text(page, '[data-testid=cancel-outcome]')).toMatch(/^Cancel: /);
    expect((await stateOf('dash-cancel')).status).toBe('cancelled');
    await until(async () => (await text(page, 'main')).includes('cancelled'), 'the page to show cancelled');
    await shot(page, '4-operation-cancelled');

    await page.click('[data-testid=nav-workers]');
    await until(async () => (await text(page, '[data-testid=workers]')).includes('command'), 'the worker row');
    await shot(page, '5-workers');
    await page.click('[data-testid=nav-queues]');
    await until(async () => (await text(page, '[data-testid=queues]')).includes('command'), 'the queue row');
    await shot(page, '6-queues');

    await page.goto(`${base}/admin/queues/`);
    await page.locator('text=runtime command').first().waitFor({ timeout: 30_000 });
    await shot(page, '7-bull-board');
    await page.context().close();
    expect(problems).toEqual([]);
  }, 120_000);

  it('bull-board sits behind the token and names jobs by their verdict', async () => {
    expect((await fetch(`${base}/admin/queues/`)).status).toBe(401);
    const res = await fetch(
      `${base}/admin/queues/api/queues?activeQueue=runtime.command&status=completed&page=1&jobsPerPage=50`,
      { headers: auth },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { queues: Array<{ jobs: Array<{ name: string }> }> };
    const names = body.queues.flatMap((q) => q.jobs.map((j) => j.name));
    expect(names.filter((n) => n.startsWith('CANCELLED · '))).toHaveLength(1);
    expect(names).toContain('VERIFIED · dash-run');
  });

  it('a receipt forged in Redis shows a red INVALID badge, the verdict as unproven and no Promote button', async () => {
    await submit('dash-forged', 'Forged later');
    writeFileSync(join(gates, 'dash-forged'), 'go');
    await until(async () => (await stateOf('dash-forged')).state === 'finished', 'dash-forged to settle', 60_000);
    // The forgery of an attacker with write access to Redis and the artifact store: a new manifest, the record repointed.
    const env = { UH_REDIS_PREFIX: redis.prefix('dash'), UH_CACHE_DIR: dirs[2] as string };
    const receipt = JSON.parse((await storedArtifact(redis.redis, env, 'dash-forged', 'receipt')) as string) as Record<
      string,
      unknown
    >;
    await forgeStoredArtifacts(redis.redis, env, 'dash-forged', {
      receipt: JSON.stringify({ ...receipt, final_message: 'all good, trust me' }),
    });
    const page = await openPage();
    await page.goto(`${base}/?token=${TOKEN}`);
    await page.goto(`${base}/#/op/dash-forged`);
    await page.locator('[data-testid=signature]').waitFor({ timeout: 30_000 });
    expect(await page.locator('[data-testid=signature]').getAttribute('data-state')).toBe('invalid');
    expect(await text(page, '[data-testid=signature]')).toContain('INVALID signature');
    expect(await page.locator('[data-testid=signature] .badge').getAttribute('class')).toContain('sig-invalid'); // red, bold
    expect(await text(page, 'main')).toContain('unproven');
    expect(await page.locator('[data-testid=promote]').count()).toBe(0);
    await shot(page, '8-operation-forged');
    await page.context().close();
  }, 90_000);
});
