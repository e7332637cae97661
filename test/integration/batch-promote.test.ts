/**
 * `uh batch promote`: after comparing a batch, the chosen runtime's child becomes a branch in the
 * user's repository; a failed child is refused like any failed operation.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { FAKE_AGENT, runCli } from '../support/cli.js';
import { git, makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
let repo: string;
let stateDir: string;
let cacheDir: string;
afterAll(() => dirs.forEach(removeDir));

beforeAll(async () => {
  repo = makeRepo({ 'README.md': '# r\n' });
  stateDir = tempDir('uh-bpstate-');
  cacheDir = tempDir('uh-bpcache-');
  const work = tempDir('uh-bpbatch-');
  dirs.push(repo, stateDir, cacheDir, work);
  mkdirSync(join(stateDir, 'adapters'), { recursive: true });
  for (const id of ['good', 'bad']) {
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
  const missionPath = join(work, 'mission.yaml');
  writeFileSync(
    missionPath,
    stringify({
      schema_version: 'uh.mission.v0',
      mission_id: 'cmp',
      operation_id: 'cmp-p1',
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
  const ran = await runCli(['batch', 'run', missionPath, '--json', '--state-dir', stateDir], {
    cwd: work,
    env: { UH_CACHE_DIR: cacheDir },
  });
  expect(ran.code).toBe(1);
});

describe('uh batch promote', () => {
  const promote = (args: string[]) =>
    runCli(['batch', 'promote', 'cmp-p1', '--state-dir', stateDir, ...args], {
      cwd: stateDir,
      env: { UH_CACHE_DIR: cacheDir },
    });

  it("promotes the chosen runtime's child to its branch", async () => {
    const r = await promote(['--runtime', 'good', '--branch', 'pick/{runtime}', '--json']);
    expect(r.code).toBe(0);
    const record = JSON.parse(r.stdout);
    expect(record).toMatchObject({ operation_id: 'cmp-p1.good', branch: 'pick/good', decision: 'promoted' });
    expect(git(repo, 'show', 'pick/good:notes.txt')).toBe('hi');
  });

  it('refuses the failed child, an unknown runtime and a trial out of range (exit 2)', async () => {
    const bad = await promote(['--runtime', 'bad']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('cmp-p1.bad cannot be promoted (status failed');
    const unknown = await promote(['--runtime', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('has no runtime "nope" (it has good, bad)');
    const trial = await promote(['--runtime', 'good', '--trial', '2']);
    expect(trial.code).toBe(2);
    expect(trial.stderr).toContain('--trial: "2" must be a whole number from 1 to 1');
  });
});
