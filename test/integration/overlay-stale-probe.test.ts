/**
 * A successful overlay probe is remembered for an hour (src/workers/sandbox/sandbox-backend.ts);
 * if the host stops mounting overlays in a user namespace in the meantime, the run is blocked on
 * the host with the reason and the operator's next step, not failed as the agent's, and the
 * remembered probe is forgotten, so the next run under `auto` makes a worktree sandbox instead.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { whichOnPath } from '../../src/shared/process/bwrap-probe.js';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeCodexMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const missionFile = (work: string, repo: string, n: number): string =>
  writeCodexMission(join(work, `mission-${n}.yaml`), repo, `stale-overlay-${n}`);

describe('an overlay mount that stopped working after its probe', () => {
  it('blocks the run (exit 3) with the reason and a hint, forgets the probe, and auto then makes a worktree', async () => {
    const work = tempDir('uh-stale-overlay-');
    const repo = makeRepo();
    dirs.push(work, repo);
    const unshare = whichOnPath('unshare', process.env.PATH);
    expect(unshare, 'util-linux unshare is on PATH').not.toBeNull();
    // The real unshare for the probe (its first call), then refused as without user namespaces.
    const bin = join(work, 'bin');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'unshare'),
      `#!/bin/sh\nif [ ! -e ${work}/probed ]; then touch ${work}/probed; exec ${unshare} "$@"; fi\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n`,
    );
    chmodSync(join(bin, 'unshare'), 0o755);
    const cacheDir = join(work, 'cache');
    const env = { PATH: `${bin}:${process.env.PATH}`, UH_CACHE_DIR: cacheDir, FAKE_CODEX_SCENARIO: 'success' };
    const state = ['--state-dir', join(work, 'state')];
    const r = await runCli(['mission', 'run', missionFile(work, repo, 1), '--json', ...state], {
      cwd: work,
      env: { ...env, UH_SANDBOX_BACKEND: 'overlay' },
    });
    expect(r.code, r.stderr).toBe(3);
    const receipt = JSON.parse(r.stdout);
    expect(receipt.status).toBe('blocked');
    expect(receipt.outcome.raw).toBe('isolation:overlay');
    expect(receipt.outcome.message).toContain('Operation not permitted');
    expect(receipt.outcome.hint).toContain('UH_SANDBOX_BACKEND=auto');
    expect(existsSync(join(cacheDir, 'overlay-probe.json'))).toBe(false);

    const next = await runCli(['mission', 'run', missionFile(work, repo, 2), '--json', ...state], {
      cwd: work,
      env: { ...env, UH_SANDBOX_BACKEND: 'auto' },
    });
    expect(next.code, next.stderr).toBe(0);
    expect(JSON.parse(next.stdout).sandbox.backend).toBe('git-worktree');
  });
});
