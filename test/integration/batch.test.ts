/**
 * `uh batch run` / `uh batch report`: one mission on two runtimes (two manifests of the
 * command runtime), compared side by side; each runtime is its own idempotent operation.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
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
  stateDir = tempDir('uh-state-');
  cacheDir = tempDir('uh-cache-');
  const work = tempDir('uh-batch-');
  dirs.push(repo, stateDir, cacheDir, work);
  mkdirSync(join(stateDir, 'adapters'), { recursive: true });
  for (const id of ['good', 'bad']) {
    writeFileSync(
      join(stateDir, 'adapters', `${id}.yaml`),
      stringify({ schema_version: 'uh.adapter.v0', id, name: id, runtime_kind: 'command', runtime_config: { argv: ['true'] } }),
    );
  }
  missionPath = join(work, 'mission.yaml');
  writeFileSync(
    missionPath,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: 'cmp',
      operation_id: 'cmp-001',
      title: 'Compare two agents',
      objective: 'Write notes.txt',
      repository: { url: repo, ref: 'main' },
      runtime: ['good', 'bad'],
      runtime_config_overrides: {
        good: { argv: [process.execPath, FAKE_AGENT, 'edit', 'notes.txt', 'hi'] },
        bad: { argv: [process.execPath, FAKE_AGENT, 'exit', '2'] },
      },
      verification: [{ name: 'notes', argv: ['test', '-f', 'notes.txt'] }],
    }),
  );
});

describe('uh batch', () => {
  it('runs every runtime as its own operation and compares them; exit 1 when one failed', async () => {
    const r = await runCli(['batch', 'run', missionPath, '--json', '--state-dir', stateDir], { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
    expect(r.code).toBe(1);
    const body = JSON.parse(r.stdout);
    expect(body.batch).toMatchObject({ batch_id: 'cmp-001', runtimes: ['good', 'bad'] });
    expect(body.comparison).toMatchObject([
      { runtime: 'good', operation_id: 'cmp-001.good', status: 'completed', verdict: 'verified', changed_files: 1, checks: '1/1', exit_code: 0, final_message: 'Edited notes.txt.' },
      { runtime: 'bad', operation_id: 'cmp-001.bad', status: 'failed', verdict: 'unverified', changed_files: 0, exit_code: 1 },
    ]);
    expect(existsSync(join(stateDir, 'operations', 'cmp-001.good', 'receipt.json'))).toBe(true);
    const receipt = JSON.parse(readFileSync(join(stateDir, 'operations', 'cmp-001.good', 'receipt.json'), 'utf8'));
    expect(receipt.labels).toMatchObject({ 'uh.batch': 'cmp-001' });
  });

  it('reports the same comparison later, as a table', async () => {
    const r = await runCli(['batch', 'report', 'cmp-001', '--state-dir', stateDir], { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/good\s+completed\s+verified\s+1\s+1\/1/);
    expect(r.stdout).toMatch(/bad\s+failed\s+unverified/);
  });

  it('never runs an operation twice: a second batch run attaches to each receipt', async () => {
    const before = readFileSync(join(stateDir, 'operations', 'cmp-001.good', 'receipt.json'), 'utf8');
    const r = await runCli(['batch', 'run', missionPath, '--json', '--state-dir', stateDir], { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
    expect(r.code).toBe(1);
    expect(readFileSync(join(stateDir, 'operations', 'cmp-001.good', 'receipt.json'), 'utf8')).toBe(before);
  });

  it('refuses a batch of one, or an unknown runtime, before running anything', async () => {
    const one = await runCli(['batch', 'run', missionPath, '--runtimes', 'good', '--state-dir', stateDir], { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
    expect(one.code).toBe(2);
    expect(one.stderr).toContain('at least two runtimes');
    const fresh = tempDir('uh-state-');
    dirs.push(fresh);
    cpSync(join(stateDir, 'adapters'), join(fresh, 'adapters'), { recursive: true });
    const unknown = await runCli(['batch', 'run', missionPath, '--runtimes', 'good,nope', '--state-dir', fresh], { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown runtime "nope"');
    expect(readdirSync(fresh)).toEqual(['adapters']);
  });
});
