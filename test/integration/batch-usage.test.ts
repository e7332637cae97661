/**
 * The usage channel of `command` agents: a `uh-runtime-usage` block on stdout or `$UH_USAGE_FILE`
 * (written inside the sandbox, under the host's isolation) fills the receipt's usage, model and
 * version; the cost comes from the price table keyed by the model; `uh mission status` and the
 * batch report show tokens and cost; a garbage report is ignored with a note and changes no
 * verdict; `uh batch compare` gives per task × runtime deltas of two suite batches.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { marked } from 'marked';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { FAKE_AGENT, runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
let repo: string;
let stateDir: string;
let cacheDir: string;
let work: string;
afterAll(() => dirs.forEach(removeDir));

const BLOCK = {
  input_tokens: 1200,
  cached_input_tokens: 200,
  output_tokens: 300,
  model: 'gpt-5-mini',
  version: '1.4.2',
};
const FILE = { input_tokens: 1000, output_tokens: 100, cost_usd: 0.5, model: 'other-model' };
const PRICES = { 'gpt-5-mini': { input_per_mtok: 1, cached_input_per_mtok: 0.1, output_per_mtok: 10 } };
/** (1000 × 1 + 200 × 0.1 + 300 × 10) / 1e6 */
const BLOCK_COST = 0.00402;

const agent = (...args: string[]) => [process.execPath, FAKE_AGENT, ...args];

function mission(path: string, fields: Record<string, unknown>): string {
  writeFileSync(
    path,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: 'usage',
      operation_id: 'usage-001',
      title: 'Usage of command agents',
      objective: 'Write notes.txt',
      repository: { url: repo, ref: 'main' },
      runtime: ['alpha', 'beta'],
      verification: [{ name: 'notes', argv: ['test', '-f', 'notes.txt'] }],
      ...fields,
    }),
  );
  return path;
}

beforeAll(() => {
  repo = makeRepo({ 'README.md': '# r\n' });
  stateDir = tempDir('uh-usage-state-');
  cacheDir = tempDir('uh-usage-cache-');
  work = tempDir('uh-usage-');
  dirs.push(repo, stateDir, cacheDir, work);
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
});

const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
  runCli([...args, '--state-dir', stateDir], {
    cwd: work,
    env: { UH_CACHE_DIR: cacheDir, REDIS_URL: undefined, UH_PRICES: JSON.stringify(PRICES), ...env },
  });

describe('usage reported by command agents', () => {
  it('reaches the receipt, uh mission status and the batch report’s tokens and cost (block and file, isolated)', async () => {
    const path = mission(join(work, 'usage.yaml'), {
      runtime_config_overrides: {
        alpha: { argv: agent('usage', JSON.stringify(BLOCK), 'notes.txt', 'hi') },
        beta: {
          argv: [
            'sh',
            '-c',
            `echo hi > notes.txt && exec "${process.execPath}" "${FAKE_AGENT}" usage-file '${JSON.stringify(FILE)}'`,
          ],
        },
      },
    });
    const ran = await cli(['batch', 'run', path, '--trials', '2', '--json']);
    expect(ran.code, ran.stderr).toBe(0);
    const receipt = JSON.parse(
      readFileSync(join(stateDir, 'operations', 'usage-001.alpha.t1', 'receipt.json'), 'utf8'),
    );
    expect(receipt.isolation.kind).toBe('bwrap');
    expect(receipt.usage).toEqual({
      input_tokens: 1200,
      cached_input_tokens: 200,
      output_tokens: 300,
      cost_usd: BLOCK_COST,
    });
    expect(receipt.runtime).toMatchObject({ model: 'gpt-5-mini', version: '1.4.2' });
    const fromFile = JSON.parse(
      readFileSync(join(stateDir, 'operations', 'usage-001.beta.t1', 'receipt.json'), 'utf8'),
    );
    expect(fromFile.usage).toEqual({ input_tokens: 1000, output_tokens: 100, cost_usd: 0.5 });
    expect(fromFile.runtime.model).toBe('other-model');
    expect(fromFile.changed_files.map((f: { path: string }) => f.path)).toEqual(['notes.txt']); // the usage file is in no diff

    const report = JSON.parse(ran.stdout);
    const [alpha, beta] = report.runtimes;
    expect(alpha).toMatchObject({
      tokens: 3000,
      cost_usd: 2 * BLOCK_COST,
      models: ['gpt-5-mini'],
      versions: ['1.4.2'],
    });
    expect(beta).toMatchObject({ tokens: 2200, cost_usd: 1, models: ['other-model'], versions: [] });
    expect(report.trials[0]).toMatchObject({ tokens: 1500, cost_usd: BLOCK_COST, model: 'gpt-5-mini' });

    const table = await cli(['batch', 'report', 'usage-001']);
    expect(table.stdout).toMatch(/alpha\s.*\s3000\s+\$0\.0080\s.*gpt-5-mini\s+1\.4\.2/);
    expect(table.stdout).toMatch(/beta\s.*\s2200\s+\$1\.00\s.*other-model\s+unknown/);

    const status = await cli(['mission', 'status', 'usage-001.alpha.t1']);
    expect(status.stdout).toContain('usage: 1200 in (200 cached) · 300 out · gpt-5-mini 1.4.2 · $0.0040');
  }, 120_000);

  it('ignores a garbage usage report with a note in the events; the verdict stands', async () => {
    const path = mission(join(work, 'garbage.yaml'), {
      operation_id: 'garbage-001',
      runtime: 'alpha',
      runtime_config_overrides: {
        alpha: {
          argv: [
            'sh',
            '-c',
            `echo hi > notes.txt && "${process.execPath}" "${FAKE_AGENT}" usage '{"input_tokens": -5, "model": "x y"}' && exec "${process.execPath}" "${FAKE_AGENT}" usage-file '${'x'.repeat(5000)}'`,
          ],
        },
      },
    });
    const ran = await cli(['mission', 'run', path, '--json']);
    expect(ran.code, ran.stderr).toBe(0);
    const receipt = JSON.parse(readFileSync(join(stateDir, 'operations', 'garbage-001', 'receipt.json'), 'utf8'));
    expect(receipt.verdict).toBe('verified');
    expect(receipt.usage).toEqual({});
    expect(receipt.runtime.model).toBeUndefined();
    const events = readFileSync(join(stateDir, 'operations', 'garbage-001', 'events.jsonl'), 'utf8');
    expect(events).toContain('usage report ignored: $UH_USAGE_FILE: over 4096 bytes');
    expect(events).toContain('usage report ignored: uh-runtime-usage block: invalid input_tokens, model');
    const notes = events.split('\n').filter((l) => l.includes('"runtime.log"'));
    expect(notes).toHaveLength(2);
    expect(notes.join('\n')).not.toContain('xxxxxxxx'); // the note names the problem, never the content
  }, 60_000);

  it('uh batch compare: per task × runtime deltas of pass rate, duration and tokens, and --json', async () => {
    const suite = join(work, 'suite');
    mkdirSync(suite);
    mission(join(suite, 'notes.yaml'), { operation_id: 'notes-001', title: 'Notes' });
    mission(join(suite, 'readme.yaml'), {
      operation_id: 'readme-001',
      title: 'Readme',
      verification: [{ name: 'readme', argv: ['grep', '-q', 'hi', 'README.md'] }],
    });
    const suiteFile = (name: string, tokens: number, readme: string) => {
      const file = join(suite, `${name}.yaml`);
      writeFileSync(
        file,
        stringify({
          schema_version: 'uh.suite.v0',
          suite_id: name,
          title: name,
          runtimes: ['alpha', 'beta'],
          tasks: ['notes.yaml', 'readme.yaml'],
          runtime_config_overrides: {
            alpha: {
              argv: [
                'sh',
                '-c',
                `echo hi > notes.txt; echo ${readme} > README.md; exec "${process.execPath}" "${FAKE_AGENT}" usage '{"input_tokens": ${tokens}, "output_tokens": 0}'`,
              ],
            },
            beta: { argv: agent('edit', 'notes.txt', 'hi') },
          },
        }),
      );
      return file;
    };
    const a = await cli(['batch', 'run', suiteFile('before', 1000, 'hi'), '--id', 'cmp-a', '--json']);
    expect(a.code, a.stderr).toBe(1); // beta never writes README.md
    const summary = join(work, 'step-summary.md');
    const b = await cli(['batch', 'run', suiteFile('after', 1500, 'nope'), '--id', 'cmp-b', '--json'], {
      GITHUB_STEP_SUMMARY: summary,
    });
    expect(b.code, b.stderr).toBe(1);
    // In a CI step, the Markdown report is its summary: the runtimes, the task × runtime matrix, the trials.
    const tables = (await marked.parse(readFileSync(summary, 'utf8'))).match(/<table>[\s\S]*?<\/table>/g) ?? [];
    expect(tables).toHaveLength(3);
    expect(tables[1]).toMatch(/<th>task<\/th>\s*<th>alpha<\/th>\s*<th>beta<\/th>/);
    expect(tables[1]).toMatch(/<td>readme<\/td>\s*<td>0% \(0\/1\)<\/td>/);

    const json = await cli(['batch', 'compare', 'cmp-a', 'cmp-b', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const c = JSON.parse(json.stdout);
    expect(c).toMatchObject({ schema_version: 'uh.batch-compare.v0', a: 'cmp-a', b: 'cmp-b' });
    const cell = (task: string, runtime: string) =>
      c.tasks.find((r: { task: string; runtime: string }) => r.task === task && r.runtime === runtime);
    expect(cell('notes', 'alpha')).toMatchObject({ delta: 0, tokens_delta: 500, a: { tokens_per_trial: 1000 } });
    expect(cell('readme', 'alpha')).toMatchObject({ delta: -1, a: { pass_at_1: 1 }, b: { pass_at_1: 0 } });
    expect(cell('readme', 'beta')).toMatchObject({ delta: 0, tokens_delta: null });
    expect(typeof cell('notes', 'beta').median_ms_delta).toBe('number');
    expect(c.rows.find((r: { runtime: string }) => r.runtime === 'alpha')).toMatchObject({ task: null, delta: -0.5 });

    const text = await cli(['batch', 'compare', 'cmp-a', 'cmp-b']);
    expect(text.stdout).toMatch(/readme\s+alpha\s+100% \(1\/1\)\s+0% \(0\/1\)\s+-100 pp/);
    expect(text.stdout).toMatch(/notes\s+alpha\s.*1000 → 1500 \(\+500\)/);
  }, 180_000);
});
