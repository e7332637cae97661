/**
 * A suite on the fleet, end to end: real Redis, two pool workers and a results worker, real git.
 * 3 tasks (two missions and one Harbor task whose tests are a hidden verifier) × 2 `command`
 * runtimes × 3 trials = 18 child operations of one flow. One worker is SIGKILLed mid-batch: its
 * child becomes an infrastructure error, is retried automatically as a new child operation, and
 * the batch settles without an operator; pass rates exclude the error. The agent looks for the
 * hidden tests and finds nothing; the HTML report in Chromium shows the matrix and the error.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { buildApiServer } from '../../src/producers/http/api-server.js';
import { QueueClient } from '../../src/producers/queue/queue-client.js';
import { loadConfig } from '../../src/shared/config.js';
import { runCli, type CliResult } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { waitFor } from '../support/process.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';

// The agents coordinate with the test through a counter file outside their sandbox (hidden under
// bubblewrap by design); the hidden verifier's invisibility does not depend on isolation here.
process.env.UH_ISOLATION = 'off';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
let redis: TestRedis;
let repo: string;
let cacheDir: string;
let work: string;
const dirs: string[] = [];
const workers: WorkerProcess[] = [];
const orphans: number[] = [];

beforeAll(async () => {
  redis = await startTestRedis('suite');
  repo = makeRepo({ 'README.md': '# demo\n' });
  cacheDir = tempDir('uh-suitecache-');
  work = tempDir('uh-suite-');
  dirs.push(repo, cacheDir, work);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  for (const pid of orphans) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

const env = (prefix: string) => ({
  REDIS_URL: redis.url,
  UH_REDIS_PREFIX: prefix,
  UH_CACHE_DIR: cacheDir,
  UH_QUEUE_LOCK_MS: '2000',
  UH_QUEUE_STALLED_INTERVAL_MS: '1000',
  UH_HEARTBEAT_MS: '500',
});

/**
 * alpha: looks for the hidden tests (tried.txt), writes notes.txt, other.txt and app.txt with TWO;
 * its very first execution hangs (the one we kill under). beta: writes notes.txt only.
 */
function state(counter: string): string {
  const dir = tempDir('uh-suitestate-');
  dirs.push(dir);
  mkdirSync(join(dir, 'adapters'));
  const scripts = {
    alpha: `if [ ! -s "${counter}" ]; then echo $$ >> "${counter}"; exec sleep 60; fi; { cat tests/test.sh; ls "$UH_TESTS_DIR"; } > tried.txt 2>&1; echo hi > notes.txt; echo x > other.txt; printf 'one\\nTWO\\n' > app.txt`,
    beta: `echo hi > notes.txt`,
  };
  for (const [id, script] of Object.entries(scripts))
    writeFileSync(
      join(dir, 'adapters', `${id}.yaml`),
      stringify({
        schema_version: 'uh.adapter.v0',
        id,
        name: id,
        runtime_kind: 'command',
        runtime_config: { argv: ['sh', '-c', script], kill_grace_ms: 500 },
      }),
    );
  return dir;
}

function writeSuite(): string {
  const suite = join(work, 'smoke');
  mkdirSync(suite);
  writeFileSync(
    join(suite, 'suite.yaml'),
    stringify({ schema_version: 'uh.suite.v0', suite_id: 'smoke', title: 'Smoke suite', runtimes: ['alpha', 'beta'] }),
  );
  const mission = (id: string, file: string) =>
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: id,
      operation_id: id,
      title: `Write ${file}`,
      objective: `Write ${file}`,
      repository: { url: repo, ref: 'main' },
      runtime: 'alpha',
      verification: [{ name: 'file', argv: ['sh', '-c', `test -f ${file} || { echo "FAIL: no ${file}"; exit 1; }`] }],
    });
  writeFileSync(join(suite, 'notes.yaml'), mission('notes', 'notes.txt'));
  writeFileSync(join(suite, 'other.yaml'), mission('other', 'other.txt'));
  const task = join(suite, 'app-two');
  for (const d of ['environment', 'tests', 'solution']) mkdirSync(join(task, d), { recursive: true });
  writeFileSync(
    join(task, 'task.toml'),
    'version = "1.0"\n[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 30.0 # seconds\n',
  );
  writeFileSync(join(task, 'instruction.md'), '# Make app.txt say TWO\nReplace two with TWO in app.txt.\n');
  writeFileSync(join(task, 'environment', 'app.txt'), 'one\ntwo\n');
  writeFileSync(
    join(task, 'tests', 'test.sh'),
    'if grep -q TWO app.txt; then echo 1 > "$UH_VERIFIER_LOGS_DIR/reward.txt"; else echo "FAIL: app.txt has no TWO"; echo 0 > "$UH_VERIFIER_LOGS_DIR/reward.txt"; fi\n',
  );
  writeFileSync(join(task, 'solution', 'solve.sh'), "printf 'one\\nTWO\\n' > app.txt\n");
  chmodSync(join(task, 'tests', 'test.sh'), 0o755);
  return suite;
}

const TOKEN = 'batch-suite-token-5f1e2d3c4b5a69788796';

/** POST /v1/batches (a suite of inline missions), GET /v1/batches, and the dashboard's batch page. */
async function overHttp(prefix: string, producer: string, batchId: string, browser: Browser): Promise<void> {
  const client = await QueueClient.open(
    loadConfig({ UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir }).queue,
    redis.url,
  );
  const app = await buildApiServer({
    client,
    config: readApiConfig({ UH_API_TOKEN: TOKEN }, '127.0.0.1'),
    stateDir: producer,
    cacheDir,
    baseDir: producer,
    repositoryPolicy: { allowLocal: true, allowHttp: false },
    prices: {},
    receiptKey: { key: 'k'.repeat(32), keyFile: '/nonexistent/receipt.key' },
    promotionIdentity: { author: { name: 'T', email: 't@localhost' }, committer: { name: 'T', email: 't@localhost' } },
  });
  try {
    const headers = { authorization: `Bearer ${TOKEN}` };
    const task = (id: string) => ({
      task_id: id,
      mission: {
        schema_version: 'uh.mission.v0',
        mission_id: id,
        operation_id: id,
        title: `HTTP ${id}`,
        objective: 'Write notes.txt',
        repository: { url: repo, ref: 'main' },
        runtime: 'alpha',
        verification: [{ name: 'notes', argv: ['test', '-f', 'notes.txt'] }],
      },
    });
    const body = { suite: { suite_id: 'http', runtimes: ['alpha', 'beta'], tasks: [task('notes')] }, id: 'http-001' };
    const post = (payload: unknown) =>
      app.inject({ method: 'POST', url: '/v1/batches', headers, payload: payload as object });
    const created = await post(body);
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ kind: 'created', batch_id: 'http-001', tasks: ['notes'] });
    expect(created.json().operations).toHaveLength(2);
    expect((await post(body)).json()).toMatchObject({ kind: 'attached' });
    const other = await post({ ...body, suite: { ...body.suite, tasks: [task('notes'), task('more')] } });
    expect(other.statusCode).toBe(409);
    expect(other.body).toContain('tasks');
    const list = await app.inject({ method: 'GET', url: '/v1/batches', headers });
    expect(list.json().batches.map((b: { batch_id: string }) => b.batch_id)).toEqual(
      expect.arrayContaining([batchId, 'http-001']),
    );

    // The dashboard's batch page: the matrix and the error count, as text.
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${base}/?token=${TOKEN}`);
    await page.goto(`${base}/#/batches`);
    await page.locator('[data-testid=batches] a', { hasText: batchId }).click();
    await page.waitForSelector('[data-testid=batch-matrix] tbody tr');
    expect(await page.locator('[data-testid=batch-errors]').textContent()).toBe(
      '1 infrastructure errors (excluded from the rates)',
    );
    const cells = await page.locator('[data-testid=batch-matrix] tbody tr').first().locator('td').allTextContents();
    expect(cells[0]).toBe('app-two');
    expect(cells[2]).toBe('0% (0/3)');
    await page.screenshot({ path: join(ARTIFACTS, 'batch-suite-dashboard.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  } finally {
    await app.close();
    await client.close();
  }
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

describe('uh batch submit <suite> (queue)', () => {
  it('3 tasks × 2 runtimes × 3 trials over 2 workers; a killed worker’s trial is an error, retried, and the batch settles by itself', async () => {
    const prefix = redis.prefix('suite');
    const counter = join(work, 'alpha-count');
    const suite = writeSuite();
    const uh = (args: string[]): Promise<CliResult> => runCli(args, { cwd: repo, env: env(prefix) });
    const start = async (args: string[]) => {
      const w = await startWorker(['--state-dir', state(counter), ...args], {
        cwd: repo,
        env: { ...env(prefix), UH_LOG_LEVEL: 'warn' },
      });
      workers.push(w);
      return w;
    };
    const producer = state(counter);
    const w1 = await start(['--runtime', 'alpha', '--runtime', 'beta']);
    const submitted = await uh(['batch', 'submit', suite, '--trials', '3', '--json', '--state-dir', producer]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const sub = JSON.parse(submitted.stdout);
    expect(sub.tasks).toEqual(['app-two', 'notes', 'other']);
    expect(sub.operations).toHaveLength(18);
    const batchId = sub.batch_id as string;
    expect(batchId).toMatch(/^smoke-[0-9a-f]{8}$/);

    expect(await waitFor(() => lines(counter).length === 1, 30_000)).toBe(true);
    orphans.push(Number(lines(counter)[0]));
    await start(['--runtime', 'alpha', '--runtime', 'beta', '--concurrency', '2']);
    await start(['--results']);
    await w1.stop('SIGKILL');

    // No operator: the lost child is retried and the batch settles on its own.
    const settled = await waitFor(async () => {
      const s = await uh(['batch', 'status', batchId, '--json']);
      return s.code === 0 && JSON.parse(s.stdout).state === 'settled';
    }, 150_000);
    expect(settled).toBe(true);
    const final = await uh(['batch', 'report', batchId, '--format', 'json', '--state-dir', producer]);
    const report = JSON.parse(final.stdout);
    const retried = report.trials.filter((t: { superseded: boolean }) => t.superseded);
    expect(retried).toHaveLength(1);
    expect(retried[0]).toMatchObject({ runtime: 'alpha' });
    expect(retried[0].error).not.toBeNull();
    const retry = report.trials.find((t: { retry_of: string | null }) => t.retry_of === retried[0].operation_id);
    expect(retry).toMatchObject({ status: 'completed', passed: true });
    expect(retry.operation_id).toBe(`${retried[0].operation_id}.r1`);
    const [alpha, beta] = report.runtimes;
    expect(alpha).toMatchObject({ runtime: 'alpha', settled: 9, passed: 9, errors: 1, retried: 1, pass_at_1: 1 });
    expect(beta).toMatchObject({ runtime: 'beta', settled: 9, passed: 3, errors: 0 });
    const harbor = report.matrix.find((m: { task: string }) => m.task === 'app-two');
    expect(harbor.cells.map((c: { pass_at_1: number; mean_reward: number }) => [c.pass_at_1, c.mean_reward])).toEqual([
      [1, 1],
      [0, 0],
    ]);
    // The agent looked for the tests and found nothing; they are in no diff.
    const harborTrials = report.trials.filter(
      (t: { task: string; superseded: boolean }) => t.task === 'app-two' && !t.superseded,
    );
    for (const t of harborTrials.filter((t: { runtime: string }) => t.runtime === 'alpha')) {
      expect(t.diff).toContain('No such file');
      expect(t.diff).not.toContain('reward.txt');
      expect(t.changed_files).not.toContain('tests/test.sh');
    }
    const failing = harborTrials.find((t: { runtime: string }) => t.runtime === 'beta');
    expect(failing.checks).toEqual([{ name: 'hidden-verifier', passed: false, tail: 'FAIL: app.txt has no TWO' }]);
    expect(failing.reward).toBe(0);

    // Resubmitting attaches; another trial count is another batch id.
    const again = await uh(['batch', 'submit', suite, '--trials', '3', '--json', '--state-dir', producer]);
    expect(JSON.parse(again.stdout)).toMatchObject({ batch_id: batchId, attached: true });
    const more = await uh(['batch', 'submit', suite, '--trials', '2', '--json', '--state-dir', producer]);
    expect(JSON.parse(more.stdout).batch_id).not.toBe(batchId);
    await uh(['batch', 'cancel', JSON.parse(more.stdout).batch_id]);

    // The HTML report in Chromium: the matrix and the error count.
    const html = join(work, 'suite.html');
    await uh(['batch', 'report', batchId, '--format', 'html', '--out', html, '--state-dir', producer]);
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const problems: string[] = [];
      page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(pathToFileURL(html).href);
      const rows = await page.$$eval('#matrix tbody tr', (trs) =>
        trs.map((tr) =>
          Array.from(tr.querySelectorAll('td')).map((td) => (td as { textContent: string | null }).textContent ?? ''),
        ),
      );
      // The lost trial's error shows in the cell of the task it ran (the first alpha job the fleet took).
      expect(rows[0]?.[0]).toBe('app-two');
      expect(rows[0]?.[1]).toMatch(/^100% \(3\/3\)( 1 err)? r=1$/);
      expect(rows[0]?.[2]).toBe('0% (0/3) r=0');
      expect(
        rows
          .map((r) => r.slice(1).join(' '))
          .join(' ')
          .match(/1 err/g),
      ).toHaveLength(1);
      expect(rows.find((r) => r[0] === 'notes')?.[1]).toMatch(/^100% \(3\/3\)/);
      expect(rows.at(-1)).toEqual(['score (mean pass@1)', '100%', '33%']);
      expect(await page.locator('#errors').textContent()).toContain('1 infrastructure error');
      expect(await page.locator('#errors').textContent()).toContain('1 retried automatically');
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'batch-suite.png'), fullPage: true });
      expect(problems).toEqual([]);
      await overHttp(prefix, producer, batchId, browser);
    } finally {
      await browser.close();
    }
  }, 240_000);
});
