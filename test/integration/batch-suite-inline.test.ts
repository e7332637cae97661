/**
 * Suites inline and hidden verifiers on an ordinary mission: `uh batch run <suite> --oracle` runs
 * each Harbor task's solution as the agent; a task needing a container image is refused before
 * anything runs; `verification_hidden` on a mission run under the host's isolation (bubblewrap
 * where it works here): the agent cannot read the verifier, by its producer path or in its
 * sandbox; the verifier runs after it and its reward is in the receipt, its files in no diff.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
let work: string;
let cacheDir: string;
afterAll(() => dirs.forEach(removeDir));
beforeAll(() => {
  work = tempDir('uh-suitei-');
  cacheDir = tempDir('uh-suitei-cache-');
  dirs.push(work, cacheDir);
});

const VERIFIER =
  'if grep -q TWO app.txt; then echo \'{"reward": 1.0}\' > "$UH_VERIFIER_LOGS_DIR/reward.json"; else echo "FAIL: app.txt has no TWO"; echo 0 > "$UH_VERIFIER_LOGS_DIR/reward.txt"; fi\n';

function harborTask(root: string, name: string, extra: Record<string, string> = {}): string {
  const task = join(root, name);
  for (const d of ['environment', 'tests', 'solution']) mkdirSync(join(task, d), { recursive: true });
  writeFileSync(join(task, 'task.toml'), '[metadata]\ntags = ["a", "b"]\n[agent]\ntimeout_sec = 60.0\n');
  writeFileSync(join(task, 'instruction.md'), 'Replace two with TWO in app.txt.\n');
  writeFileSync(join(task, 'environment', 'app.txt'), 'one\ntwo\n');
  writeFileSync(join(task, 'tests', 'test.sh'), VERIFIER);
  writeFileSync(join(task, 'solution', 'solve.sh'), "printf 'one\\nTWO\\n' > app.txt\n");
  for (const [path, text] of Object.entries(extra)) writeFileSync(join(task, path), text);
  return task;
}

describe('suites inline', () => {
  it('--oracle runs each task’s solution/solve.sh as the agent and the hidden verifier rewards it', async () => {
    const suite = join(work, 'oracle');
    mkdirSync(suite);
    harborTask(suite, 'app-two');
    const stateDir = tempDir('uh-suitei-state-');
    dirs.push(stateDir);
    const env = { UH_CACHE_DIR: cacheDir, UH_ISOLATION: 'off' };
    const ran = await runCli(['batch', 'run', suite, '--oracle', '--json', '--state-dir', stateDir], {
      cwd: work,
      env,
    });
    expect(ran.code, ran.stderr).toBe(0);
    const report = JSON.parse(ran.stdout);
    expect(report.batch.batch_id).toMatch(/^oracle-oracle-[0-9a-f]{8}$/);
    expect(report.matrix).toEqual([
      { task: 'app-two', cells: [expect.objectContaining({ runtime: 'command', pass_at_1: 1, mean_reward: 1 })] },
    ]);
    expect(report.trials[0]).toMatchObject({ reward: 1, checks: [{ name: 'hidden-verifier', passed: true }] });
    expect(report.trials[0].diff).not.toContain('reward');
  }, 60_000);

  it('refuses a task whose environment needs a container image, naming it, before anything runs', async () => {
    const suite = join(work, 'docker');
    mkdirSync(suite);
    harborTask(suite, 'needs-image', { 'environment/Dockerfile': 'FROM alpine\n' });
    const stateDir = tempDir('uh-suitei-state-');
    dirs.push(stateDir);
    const ran = await runCli(['batch', 'run', suite, '--runtimes', 'command', '--state-dir', stateDir], {
      cwd: work,
      env: { UH_CACHE_DIR: cacheDir },
    });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain('task needs-image needs a container image (environment/Dockerfile)');
    expect(ran.stderr).toContain('no container backend');
  }, 30_000);

  it('verification_hidden on a mission: the agent cannot read it (producer path or sandbox); the reward is in the receipt', async () => {
    const repo = makeRepo({ 'app.txt': 'one\ntwo\n' });
    dirs.push(repo);
    const hidden = join(work, 'hidden');
    mkdirSync(hidden);
    writeFileSync(join(hidden, 'test.sh'), VERIFIER);
    chmodSync(join(hidden, 'test.sh'), 0o755);
    const stateDir = tempDir('uh-suitei-state-');
    dirs.push(stateDir);
    const script = `{ cat "${hidden}/test.sh"; cat tests/test.sh; ls "$UH_TESTS_DIR"; } > tried.txt 2>&1; printf 'one\\nTWO\\n' > app.txt`;
    const missionPath = join(work, 'hidden-mission.yaml');
    writeFileSync(
      missionPath,
      stringify({
        schema_version: 'uh.mission.v0',
        mission_id: 'hidden',
        operation_id: 'hidden-001',
        title: 'Hidden verifier',
        objective: 'Make app.txt say TWO',
        repository: { url: repo, ref: 'main' },
        runtime: 'command',
        runtime_config_overrides: { command: { argv: ['sh', '-c', script] } },
        verification_hidden: 'hidden',
      }),
    );
    const ran = await runCli(['mission', 'run', missionPath, '--json', '--state-dir', stateDir], {
      cwd: work,
      env: { UH_CACHE_DIR: cacheDir },
    });
    expect(ran.code, ran.stderr).toBe(0);
    const receipt = JSON.parse(ran.stdout).receipt ?? JSON.parse(ran.stdout);
    // The host isolates (bubblewrap): the producer path is outside what the agent can see.
    expect(receipt.isolation.kind).toBe('bwrap');
    expect(receipt.reward).toBe(1);
    expect(receipt.verdict).toBe('verified');
    expect(receipt.checks.map((c: { name: string }) => c.name)).toEqual(['hidden-verifier']);
    const diff = readFileSync(join(stateDir, 'operations', 'hidden-001', 'diff.patch'), 'utf8');
    expect(diff).toContain('tried.txt');
    expect(diff).not.toContain('grep -q TWO'); // the agent never saw the verifier's text
    expect(diff).toContain('No such file');
  }, 60_000);
});
