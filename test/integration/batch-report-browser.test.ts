/**
 * The HTML batch report opened in a real browser (Debian's chromium, driven by playwright-core;
 * never a downloaded browser): the rows, the pass rates, the chart and an expanded side-by-side
 * diff are what the batch's receipts say; no console errors, no network; a screenshot is
 * written to test-artifacts/batch-report.png.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { FAKE_AGENT, runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

/** A computed colour, run in the page (playwright serializes the function). */
const colour = (e: unknown): string =>
  (globalThis as unknown as { getComputedStyle(x: unknown): { color: string } }).getComputedStyle(e).color;
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));
const dirs: string[] = [];
let browser: Browser;
let reportPath: string;
let report: {
  runtimes: Array<{ runtime: string; pass_at_1: number; median_ms: number }>;
  trials: Array<{ operation_id: string; status: string }>;
};

beforeAll(async () => {
  const repo = makeRepo({ 'README.md': '# r\n', 'src/app.txt': 'one\ntwo\nthree\n' });
  const stateDir = tempDir('uh-state-');
  const cacheDir = tempDir('uh-cache-');
  dirs.push(repo, stateDir, cacheDir);
  mkdirSync(join(stateDir, 'adapters'));
  for (const id of ['alpha', 'beta'])
    writeFileSync(
      join(stateDir, 'adapters', `${id}.yaml`),
      stringify({
        schema_version: 'uh.adapter.v0',
        id,
        name: id,
        runtime_kind: 'command',
        runtime_config: { argv: ['true'] },
      }),
    );
  const missionPath = join(stateDir, 'mission.yaml');
  writeFileSync(
    missionPath,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: 'html',
      operation_id: 'html-001',
      title: 'Rewrite app.txt <safely>',
      objective: 'Rewrite src/app.txt',
      repository: { url: repo, ref: 'main' },
      runtime: ['alpha', 'beta'],
      runtime_config_overrides: {
        alpha: {
          argv: [
            process.execPath,
            FAKE_AGENT,
            'usage',
            JSON.stringify({ input_tokens: 900, output_tokens: 100, model: 'gpt-5-mini', version: '1.4.2' }),
            'src/app.txt',
            'one\nTWO <b>\nthree\n',
          ],
        },
        beta: { argv: [process.execPath, FAKE_AGENT, 'edit', 'README.md', 'nope'] },
      },
      verification: [
        {
          name: 'app-changed',
          argv: ['sh', '-c', 'grep -q TWO src/app.txt || { echo "FAIL: src/app.txt has no TWO"; exit 1; }'],
        },
      ],
    }),
  );
  const env = { UH_CACHE_DIR: cacheDir, REDIS_URL: undefined };
  await runCli(['batch', 'run', missionPath, '--trials', '2', '--state-dir', stateDir], { cwd: repo, env });
  const json = await runCli(['batch', 'report', 'html-001', '--format', 'json', '--state-dir', stateDir], {
    cwd: repo,
    env,
  });
  report = JSON.parse(json.stdout);
  reportPath = join(stateDir, 'report.html');
  const html = await runCli(
    ['batch', 'report', 'html-001', '--format', 'html', '--out', reportPath, '--state-dir', stateDir],
    { cwd: repo, env },
  );
  expect(html.code).toBe(1);
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  dirs.forEach(removeDir);
});

describe('the HTML batch report in Chromium', () => {
  it('shows the rows, pass rates, chart and an expanded diff as the data says, with no console error or request', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('request', (r) => !r.url().startsWith('file:') && problems.push(`request: ${r.url()}`));
    await page.goto(pathToFileURL(reportPath).href);

    expect(await page.title()).toBe('Batch html-001: Rewrite app.txt <safely>');
    const rows = await page.$$eval('#runtimes tbody tr', (trs) =>
      trs.map((tr) =>
        Array.from(tr.querySelectorAll('td')).map((td) => (td as { textContent: string | null }).textContent ?? ''),
      ),
    );
    expect(rows.map((r) => [r[0], r[1]])).toEqual([
      ['alpha', '100% (2/2, 95% CI 34–100%)'],
      ['beta', '0% (0/2, 95% CI 0–66%)'],
    ]);
    expect(report.runtimes.map((r) => r.pass_at_1)).toEqual([1, 0]);
    expect(rows[1]?.[4]).toContain('2× completed: verification_failed: check app-changed (exit 1) failed');

    // Sorting by pass@1 (click twice: descending, then ascending) reorders the rows.
    await page.click('#runtimes th:nth-child(2)');
    await page.click('#runtimes th:nth-child(2)');
    expect(await page.$$eval('#runtimes tbody tr td:first-child', (tds) => tds.map((td) => td.textContent))).toEqual([
      'alpha',
      'beta',
    ]);
    await page.click('#runtimes th:nth-child(2)');
    expect(await page.$$eval('#runtimes tbody tr td:first-child', (tds) => tds.map((td) => td.textContent))).toEqual([
      'beta',
      'alpha',
    ]);

    // The chart: one bar group per runtime, pass bar width proportional to pass@1.
    const bars = await page.$$eval('#chart g.bar', (gs) =>
      gs.map((g) => ({
        runtime: g.getAttribute('data-runtime'),
        pass: Number(g.querySelector('rect.pass')?.getAttribute('width')),
        duration: Number(g.querySelector('rect.duration')?.getAttribute('width')),
      })),
    );
    expect(bars.map((b) => b.runtime)).toEqual(['alpha', 'beta']);
    expect(bars[0]?.pass).toBe(300);
    expect(bars[1]?.pass).toBe(0);
    expect(Math.max(...bars.map((b) => b.duration))).toBe(300);

    // Expand alpha's first trial: a side-by-side diff of src/app.txt, old left, new right.
    const trial = page.locator('details.trial[data-operation="html-001.alpha.t1"]');
    expect(await trial.locator('table.diff').isVisible()).toBe(false);
    await trial.locator('summary').click();
    await page.waitForFunction('document.querySelector(\'details.trial[data-operation="html-001.alpha.t1"]\').open');
    expect(await trial.locator('table.diff').isVisible()).toBe(true);
    expect(await trial.locator('tr.file td').first().textContent()).toBe('src/app.txt');
    expect(await trial.locator('td.del').allTextContents()).toEqual(['two']);
    expect(await trial.locator('td.add').allTextContents()).toEqual(['TWO <b>']);
    expect(await page.locator('details.trial').count()).toBe(report.trials.length);

    // beta's trial: completed / verification_failed is red (never green), its check's output is
    // shown from the receipt, and no worker-host log path appears anywhere.
    const failed = page.locator('details.trial[data-operation="html-001.beta.t1"]');
    const verdict = failed.locator('summary span');
    expect(await verdict.textContent()).toBe('completed / verification_failed');
    expect(await verdict.evaluate(colour)).toBe('rgb(207, 34, 46)');
    expect(await page.locator('details.trial[data-operation="html-001.alpha.t1"] summary span').evaluate(colour)).toBe(
      'rgb(26, 127, 55)',
    );
    await failed.locator('summary').click();
    expect(await failed.locator('pre').first().textContent()).toBe('FAIL: src/app.txt has no TWO');
    expect(await failed.locator('pre').first().isVisible()).toBe(true);
    expect(await page.content()).not.toContain('check-app-changed.log');
    expect(rows[1]?.[11]).toBe('app-changed 0/2');
    expect(rows.map((r) => r[3])).toEqual(['0', '0']); // the errors column
    expect(await page.locator('#errors').textContent()).toContain('0 infrastructure errors');

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'batch-report.png'), fullPage: true });
    // Model and version per runtime, as the agents reported them (beta reported none), and the mean reward column.
    const cellsOf = (runtime: string) =>
      page.$$eval(`#runtimes tr[data-runtime="${runtime}"] td`, (tds) => tds.map((td) => td.textContent));
    const alpha = await cellsOf('alpha');
    expect(alpha.slice(-3)).toEqual(['-', 'gpt-5-mini', '1.4.2']);
    expect((await cellsOf('beta')).slice(-3)).toEqual(['-', 'unknown', 'unknown']);
    expect(alpha[8]).toBe('2000'); // tokens

    // Per trial: links to its events and transcript, relative to the report, that resolve to the artifact files.
    const hrefs = await page
      .locator('details.trial[data-operation="html-001.alpha.t1"] summary a')
      .evaluateAll((as) => as.map((a) => [a.getAttribute('class'), (a as unknown as { href: string }).href]));
    expect(hrefs.map(([cls]) => cls)).toEqual(['link-events', 'link-transcript', 'link-final-message', 'link-receipt']);
    const file = (cls: string) => readFileSync(fileURLToPath(hrefs.find(([c]) => c === cls)?.[1] ?? ''), 'utf8');
    expect(file('link-events')).toContain('"type":"runtime.finished"');
    expect(file('link-transcript')).toContain('```uh-runtime-usage');
    expect(JSON.parse(file('link-receipt')).operation_id).toBe('html-001.alpha.t1');
    expect(await page.locator('details.trial a.link-events').count()).toBe(report.trials.length);

    expect(problems).toEqual([]);
    await page.close();
  });
});
