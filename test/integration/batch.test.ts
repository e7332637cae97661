/**
 * `uh batch run` / `uh batch report`, inline: one mission on three runtimes (manifests of the
 * command runtime) × trials, each its own idempotent operation; the batch record is create-once;
 * the Markdown report renders as a table in a real Markdown parser.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { marked } from 'marked';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { FAKE_AGENT, runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

// This file's fake agents coordinate with the test through files outside their sandbox (pid, gate and
// counter files), which bubblewrap isolation hides by design; isolation itself is tested in test/security/.
process.env.UH_ISOLATION = 'off';

const dirs: string[] = [];
let repo: string;
let stateDir: string;
let cacheDir: string;
let missionPath: string;
afterAll(() => dirs.forEach(removeDir));

/** Passes on odd executions (writes notes.txt), fails verification on even ones. */
export function flakyArgv(counter: string): string[] {
  const agent = `"${process.execPath}" "${FAKE_AGENT}"`;
  return [
    'sh',
    '-c',
    `n=$(cat "${counter}" 2>/dev/null | wc -l); echo x >> "${counter}"; if [ $((n % 2)) -eq 0 ]; then exec ${agent} edit notes.txt "trial $n"; else exec ${agent} edit other.txt nope; fi`,
  ];
}

beforeAll(() => {
  repo = makeRepo({ 'README.md': '# r\n' });
  stateDir = tempDir('uh-state-');
  cacheDir = tempDir('uh-cache-');
  const work = tempDir('uh-batch-');
  dirs.push(repo, stateDir, cacheDir, work);
  mkdirSync(join(stateDir, 'adapters'), { recursive: true });
  for (const id of ['good', 'bad', 'flaky']) {
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
  }
  missionPath = join(work, 'mission.yaml');
  writeFileSync(
    missionPath,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: 'cmp',
      operation_id: 'cmp-001',
      title: 'Compare agents',
      objective: 'Write notes.txt',
      repository: { url: repo, ref: 'main' },
      runtime: ['good', 'bad', 'flaky'],
      runtime_config_overrides: {
        good: { argv: [process.execPath, FAKE_AGENT, 'edit', 'notes.txt', 'hi'] },
        bad: { argv: [process.execPath, FAKE_AGENT, 'exit', '2'] },
        flaky: { argv: flakyArgv(join(work, 'flaky-count')) },
      },
      verification: [{ name: 'notes', argv: ['test', '-f', 'notes.txt'] }],
    }),
  );
});

const cli = (args: string[]) => runCli(args, { cwd: repo, env: { UH_CACHE_DIR: cacheDir, REDIS_URL: undefined } });

describe('uh batch (inline)', () => {
  it('runs every runtime × trial as its own operation and reports pass rates; exit 1 when one failed', async () => {
    const r = await cli([
      'batch',
      'run',
      missionPath,
      '--runtimes',
      'good,bad,flaky',
      '--trials',
      '3',
      '--json',
      '--state-dir',
      stateDir,
    ]);
    expect(r.code, r.stderr).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.batch).toMatchObject({ batch_id: 'cmp-001', runtimes: ['good', 'bad', 'flaky'], trials: 3 });
    expect(report.trials.map((t: { operation_id: string }) => t.operation_id)).toEqual(
      ['good', 'bad', 'flaky'].flatMap((rt) => [1, 2, 3].map((k) => `cmp-001.${rt}.t${k}`)),
    );
    const [good, bad, flaky] = report.runtimes;
    expect(good).toMatchObject({
      runtime: 'good',
      passed: 3,
      settled: 3,
      pass_at_1: 1,
      pass_at_k: 1,
      verdicts: { verified: 3 },
      files_changed: ['notes.txt'],
      checks: [{ name: 'notes', passed: 3, total: 3 }],
    });
    expect(bad).toMatchObject({ runtime: 'bad', passed: 0, pass_at_1: 0, pass_at_k: 0, statuses: { failed: 3 } });
    expect(bad.reasons[0]).toMatchObject({ status: 'failed', count: 3 });
    expect(flaky).toMatchObject({
      runtime: 'flaky',
      passed: 2,
      pass_at_k: 1,
      verdicts: { verified: 2, verification_failed: 1 },
    });
    expect(flaky.pass_at_1).toBeCloseTo(2 / 3);
    expect(good.tokens).toBeNull();
    expect(good.cost_usd).toBeNull();
    expect(good.median_ms).toBeGreaterThan(0);
    const receipt = JSON.parse(readFileSync(join(stateDir, 'operations', 'cmp-001.good.t1', 'receipt.json'), 'utf8'));
    expect(receipt.labels).toMatchObject({ 'uh.batch': 'cmp-001', 'uh.batch.trial': '1' });
  });

  it('reports the same batch later, as a table with the reasons of failed runs', async () => {
    const r = await cli(['batch', 'report', 'cmp-001', '--state-dir', stateDir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/good\s+100% \(3\/3, 95% CI 44–100%\)\s+100% \(k=3\)/);
    expect(r.stdout).toMatch(/flaky\s+67% \(2\/3, 95% CI 21–94%\)\s+100% \(k=3\)/);
    expect(r.stdout).toMatch(/good\s+completed\s+verified\s+1\s+1\/1/);
    expect(r.stdout).toMatch(/bad: 3× failed: /);
    const k1 = await cli(['batch', 'report', 'cmp-001', '--k', '1', '--state-dir', stateDir]);
    expect(k1.stdout).toMatch(/flaky\s+67% \(2\/3, 95% CI 21–94%\)\s+67% \(k=1\)/);
    const k4 = await cli(['batch', 'report', 'cmp-001', '--k', '4', '--state-dir', stateDir]);
    expect(k4.code).toBe(2);
    expect(k4.stderr).toContain('--k: "4" must be a whole number from 1 to the trial count (3)');
    const same = await cli(['batch', 'compare', 'cmp-001', 'cmp-001', '--json', '--state-dir', stateDir]);
    expect(same.code).toBe(0);
    expect(JSON.parse(same.stdout).rows).toEqual(
      ['good', 'bad', 'flaky'].map((runtime) => expect.objectContaining({ runtime, delta: 0, overlap: true })),
    );
  });

  it('renders the Markdown report as tables in a real Markdown parser', async () => {
    const r = await cli(['batch', 'report', 'cmp-001', '--format', 'md', '--state-dir', stateDir]);
    const html = await marked.parse(r.stdout);
    const tables = html.match(/<table>[\s\S]*?<\/table>/g) ?? [];
    expect(tables).toHaveLength(2);
    const rows = (tables[0]?.match(/<tr>[\s\S]*?<\/tr>/g) ?? [])
      .slice(1)
      .map((row) => (row.match(/<td>([\s\S]*?)<\/td>/g) ?? []).map((c) => c.replace(/<\/?td>/g, '')));
    expect(rows.map((c) => [c[0], c[1]])).toEqual([
      ['good', '100% (3/3, 95% CI 44–100%)'],
      ['bad', '0% (0/3, 95% CI 0–56%)'],
      ['flaky', '67% (2/3, 95% CI 21–94%)'],
    ]);
    expect(tables[1]?.match(/<tr>/g)).toHaveLength(10);
  });

  it('never overwrites: the same batch attaches, other runtimes or trials are refused (exit 2)', async () => {
    const recordBefore = readFileSync(join(stateDir, 'batches', 'cmp-001.json'), 'utf8');
    const receiptBefore = readFileSync(join(stateDir, 'operations', 'cmp-001.good.t1', 'receipt.json'), 'utf8');
    const again = await cli([
      'batch',
      'run',
      missionPath,
      '--runtimes',
      'good,bad,flaky',
      '--trials',
      '3',
      '--json',
      '--state-dir',
      stateDir,
    ]);
    expect(again.code).toBe(1);
    expect(readFileSync(join(stateDir, 'operations', 'cmp-001.good.t1', 'receipt.json'), 'utf8')).toBe(receiptBefore);
    const other = await cli([
      'batch',
      'run',
      missionPath,
      '--runtimes',
      'good,bad',
      '--trials',
      '3',
      '--state-dir',
      stateDir,
    ]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('batch cmp-001 already exists with other runtimes');
    const fewer = await cli([
      'batch',
      'run',
      missionPath,
      '--runtimes',
      'good,bad,flaky',
      '--trials',
      '2',
      '--state-dir',
      stateDir,
    ]);
    expect(fewer.code).toBe(2);
    expect(fewer.stderr).toContain('other trials');
    expect(readFileSync(join(stateDir, 'batches', 'cmp-001.json'), 'utf8')).toBe(recordBefore);
    expect(existsSync(join(stateDir, 'operations', 'cmp-001.good'))).toBe(false);
  });

  it('refuses a batch of one, an unknown runtime or bad --trials before running anything', async () => {
    const one = await cli(['batch', 'run', missionPath, '--runtimes', 'good', '--state-dir', stateDir]);
    expect(one.code).toBe(2);
    expect(one.stderr).toContain('at least two runtimes');
    const trials = await cli(['batch', 'run', missionPath, '--trials', '0', '--state-dir', stateDir]);
    expect(trials.code).toBe(2);
    expect(trials.stderr).toContain('--trials');
    const fresh = tempDir('uh-state-');
    dirs.push(fresh);
    cpSync(join(stateDir, 'adapters'), join(fresh, 'adapters'), { recursive: true });
    const unknown = await cli(['batch', 'run', missionPath, '--runtimes', 'good,nope', '--state-dir', fresh]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown runtime "nope"');
    expect(readdirSync(fresh)).toEqual(['adapters']);
  });
});
