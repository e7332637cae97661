/**
 * Inline `uh batch run` retries infrastructure errors as the fleet does: a trial blocked by the
 * host (here exit 127, "a program the command runs is missing") gets a new operation `<op>.r<n>`,
 * up to UH_BATCH_ERROR_RETRIES per slot; the report keeps the errored attempt as a retried error,
 * out of the pass rate, and uses the retry's result; running the batch again runs nothing new.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { FAKE_AGENT, runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
let repo: string;
let stateDir: string;
let cacheDir: string;
let missionPath: string;
afterAll(() => dirs.forEach(removeDir));

beforeAll(() => {
  repo = makeRepo({ 'README.md': '# r\n' });
  stateDir = tempDir('uh-retry-state-');
  cacheDir = tempDir('uh-retry-cache-');
  dirs.push(repo, stateDir, cacheDir);
  mkdirSync(join(stateDir, 'adapters'));
  for (const id of ['lossy', 'broken'])
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
  const edit = `exec "${process.execPath}" "${FAKE_AGENT}" edit notes.txt hi`;
  missionPath = join(stateDir, 'mission.yaml');
  writeFileSync(
    missionPath,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: 'retry',
      operation_id: 'retry-001',
      title: 'Retry lost trials',
      objective: 'Write notes.txt',
      repository: { url: repo, ref: 'main' },
      runtime: ['lossy', 'broken'],
      runtime_config_overrides: {
        // Missing a program on its first attempt only: the retry (…r1) works.
        lossy: { argv: ['sh', '-c', `case "$UH_OPERATION_ID" in *.r1) ${edit};; *) exit 127;; esac`] },
        broken: { argv: ['sh', '-c', 'exit 127'] },
      },
      verification: [{ name: 'notes', argv: ['test', '-f', 'notes.txt'] }],
    }),
  );
});

const cli = (args: string[]) =>
  runCli([...args, '--state-dir', stateDir], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir, REDIS_URL: undefined, UH_BATCH_ERROR_RETRIES: '1' },
  });

describe('inline batch retries of infrastructure errors', () => {
  it('retries an errored trial as <op>.r1, up to the bound, and the report uses the retry', async () => {
    const ran = await cli(['batch', 'run', missionPath, '--trials', '2', '--json']);
    expect(ran.code, ran.stderr).toBe(1);
    const report = JSON.parse(ran.stdout);
    const [lossy, broken] = report.runtimes;
    expect(lossy).toMatchObject({ settled: 2, passed: 2, pass_at_1: 1, errors: 2, retried: 2 });
    expect(broken).toMatchObject({ settled: 0, passed: 0, pass_at_1: null, errors: 4, retried: 2 });
    expect(report.trials.map((t: { operation_id: string }) => t.operation_id)).toEqual([
      'retry-001.lossy.t1',
      'retry-001.lossy.t1.r1',
      'retry-001.lossy.t2',
      'retry-001.lossy.t2.r1',
      'retry-001.broken.t1',
      'retry-001.broken.t1.r1',
      'retry-001.broken.t2',
      'retry-001.broken.t2.r1',
    ]);
    expect(report.trials[1]).toMatchObject({ retry_of: 'retry-001.lossy.t1', superseded: false, passed: true });
    expect(report.trials[0]).toMatchObject({ superseded: true, status: 'blocked' });
    expect(existsSync(join(stateDir, 'operations', 'retry-001.broken.t1.r2'))).toBe(false); // the bound: 1
    const receipt = JSON.parse(
      readFileSync(join(stateDir, 'operations', 'retry-001.lossy.t1.r1', 'receipt.json'), 'utf8'),
    );
    expect(receipt.labels['uh.batch.retry_of']).toBe('retry-001.lossy.t1');
  }, 120_000);

  it('shows the retries in the report, and running again attaches without new attempts', async () => {
    const table = await cli(['batch', 'report', 'retry-001']);
    expect(table.stdout).toContain(
      '6 infrastructure errors (unknown, lost worker, blocked by the host), 4 retried automatically',
    );
    expect(table.stdout).toMatch(/lossy\s+100% \(2\/2, 95% CI 34–100%\)\s+100% \(k=2\)\s+2\s/);
    expect(table.stdout.match(/blocked \(error, retried\)/g)).toHaveLength(4);
    const again = await cli(['batch', 'run', missionPath, '--trials', '2', '--json']);
    expect(JSON.parse(again.stdout).trials).toHaveLength(8);
    expect(existsSync(join(stateDir, 'operations', 'retry-001.lossy.t1.r2'))).toBe(false);
  }, 120_000);
});
