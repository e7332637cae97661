/**
 * The dashboard's Recover button (issue 31): on an `unknown` operation (its worker killed with -9
 * mid-run) the operation page offers Recover; clicking it settles the operation through
 * `POST /v1/operations/:id/recover` (never a re-run) and the page shows the steps and the new
 * state. Real Redis, real workers, the API in this process, Chromium through playwright-core.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { loadConfig } from '../../src/shared/config.js';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

process.env.UH_ISOLATION = 'off';

const TOKEN = 'recover-token-0123456789abcdef-01234567';
let redis: TestRedis;
let browser: Browser;
let app: FastifyInstance;
let client: QueueClient;
const workers: WorkerProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  redis = await startTestRedis('dash-recover');
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  app?.server.closeAllConnections();
  await app?.close();
  await client?.close();
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

const temp = (p: string) => {
  const d = tempDir(p);
  dirs.push(d);
  return d;
};

describe('the dashboard on an unknown operation', () => {
  it('offers Recover; a click settles it without running it again and shows the steps', async () => {
    const repo = makeRepo({ 'README.md': '# recover\n' });
    dirs.push(repo);
    const prefix = redis.prefix('recover');
    const cacheDir = temp('uh-rcache-');
    const env = { REDIS_URL: redis.url, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir, UH_LOG_LEVEL: 'warn' };
    const config = loadConfig({ UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir });
    client = await QueueClient.open(config.queue, redis.url);
    app = await buildApiServer({
      client,
      config: readApiConfig({ UH_API_TOKEN: TOKEN }, '127.0.0.1'),
      stateDir: temp('uh-rstate-'),
      cacheDir,
      baseDir: repo,
      repositoryPolicy: { allowLocal: true, allowHttp: false },
      prices: {},
      receiptKey: config.receipts,
      promotionIdentity: {
        author: { name: 'T', email: 't@localhost' },
        committer: { name: 'T', email: 't@localhost' },
      },
    });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    workers.push(await startWorker(['--results', '--state-dir', temp('uh-rs-')], { cwd: repo, env }));
    const victim = await startWorker(['--runtime', 'command', '--state-dir', temp('uh-rs-')], { cwd: repo, env });
    workers.push(victim);
    const count = join(temp('uh-rcount-'), 'n');
    const { path, operationId } = writeMission(repo, ['count', count, 'slow', '60000']);
    const uh = (args: string[]) => runCli([...args, '--state-dir', temp('uh-rs-')], { cwd: repo, env });
    expect((await uh(['mission', 'submit', path])).code).toBe(0);
    expect(await waitFor(() => existsSync(count), 20_000, 100)).toBe(true);
    await victim.stop('SIGKILL');
    const state = async () =>
      JSON.parse((await uh(['mission', 'status', operationId, '--json'])).stdout).operation?.state;
    expect(await waitFor(async () => (await state()) === 'unknown', 20_000, 250)).toBe(true);

    const page = await browser.newPage();
    await page.goto(`${base}/?token=${TOKEN}`);
    await page.goto(`${base}/#/op/${operationId}`);
    await page.waitForSelector('[data-testid=recover]:not([hidden])', { timeout: 15_000 });
    await page.click('[data-testid=recover]');
    const outcome = page.locator('[data-testid=cancel-outcome]');
    await waitFor(async () => ((await outcome.textContent()) ?? '').startsWith('Recover:'), 15_000, 100);
    const said = (await page.textContent('[data-testid=cancel-outcome]')) ?? '';
    expect(said).toMatch(/unknown → settled as failed with a receipt \(not re-run\)/);
    expect(await state()).toBe('finished');
    // Settled: the button is gone once the page shows the new state.
    await page.waitForSelector('[data-testid=recover][hidden]', { state: 'attached', timeout: 15_000 });
    expect((await uh(['mission', 'status', operationId, '--json'])).code).toBe(1);
    await page.close();
  });
});
