/**
 * `uh mission recover` on the local state dir: a `uh mission run` killed with SIGKILL after its
 * runtime started is settled (never re-run), its retained sandbox diffed; a second run of the
 * same mission then attaches to that receipt.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { processGone, waitFor } from '../support/process.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function groupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

describe('uh mission recover (inline state)', () => {
  it('settles a run whose uh process was killed after the runtime started, without running it again', async () => {
    const repo = makeRepo();
    const stateDir = tempDir('uh-state-');
    const cacheDir = tempDir('uh-cache-');
    const work = tempDir('uh-work-');
    dirs.push(repo, stateDir, cacheDir, work);
    const pidFile = join(work, 'grandchild.pid');
    const { path, operationId } = writeMission(repo, ['hang', pidFile]);
    // Unisolated: the fake agent writes its grandchild's host pid outside its sandbox.
    const env = { UH_CACHE_DIR: cacheDir, UH_ISOLATION: 'off' };
    let uhPid = 0;
    const run = runCli(['mission', 'run', path, '--state-dir', stateDir], {
      cwd: repo,
      env,
      onSpawn: (pid) => (uhPid = pid),
    });
    expect(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '')).toBe(true);
    const grandchild = Number(readFileSync(pidFile, 'utf8'));
    const group = groupOf(grandchild);
    process.kill(uhPid, 'SIGKILL');
    expect((await run).code).toBe(null);
    // The runtime outlives uh: it has its own process group.
    expect(processGone(grandchild)).toBe(false);

    const status = await runCli(['mission', 'status', operationId, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env,
    });
    expect(status.code).toBe(5);
    expect(JSON.parse(status.stdout).operation).toMatchObject({ state: 'running', runtime_started: true });

    const recover = await runCli(['mission', 'recover', operationId, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env,
    });
    expect(recover.code).toBe(1);
    const body = JSON.parse(recover.stdout);
    expect(body.operation).toMatchObject({ state: 'finished', status: 'failed' });
    expect(body.steps.join('\n')).toContain('after its runtime started → unknown');
    // Recover ended the runtime's leftover process group, grandchildren included.
    expect(body.steps.join('\n')).toContain(`killed the runtime's leftover process group(s): ${group}`);
    expect(await waitFor(() => processGone(grandchild))).toBe(true);
    const receipt = JSON.parse(readFileSync(join(stateDir, 'operations', operationId, 'receipt.json'), 'utf8'));
    expect(receipt.outcome).toMatchObject({ status: 'failed', raw: 'unknown' });
    // Recover ends the operation through the one finishing module: its receipt is signed like any other.
    const verified = await runCli(
      ['receipt', 'verify', join(stateDir, 'operations', operationId, 'receipt.json'), '--json'],
      { cwd: repo, env },
    );
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ state: 'valid' });

    // Recover again: nothing to do. Run again: attaches to the receipt, never re-runs.
    const again = await runCli(['mission', 'recover', operationId, '--state-dir', stateDir], { cwd: repo, env });
    expect(again.stdout).toContain('nothing to recover');
    const rerun = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], { cwd: repo, env });
    expect(rerun.code).toBe(1);
    expect(JSON.parse(rerun.stdout).outcome.raw).toBe('unknown');
    expect(existsSync(pidFile) && readFileSync(pidFile, 'utf8')).toBe(String(grandchild)); // the agent did not start again
  });
});
