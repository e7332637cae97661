/**
 * A successful bwrap probe is remembered for an hour; if bwrap stops working in the meantime
 * (unprivileged user namespaces turned off), the run under it is reported as blocked on the
 * host, with bwrap's reason and the operator's next step, not as the agent's failure.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeCodexMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

describe('a bwrap that stopped working after its probe', () => {
  it('blocks the run (exit 3) with the reason and a hint, and forgets the probe', async () => {
    const work = tempDir('uh-stale-bwrap-');
    const repo = makeRepo();
    dirs.push(work, repo);
    const bin = join(work, 'bin');
    mkdirSync(bin);
    // Works for the first call (the probe), then fails as bwrap does without user namespaces.
    writeFileSync(
      join(bin, 'bwrap'),
      `#!/bin/sh\nif [ ! -e ${work}/probed ]; then touch ${work}/probed; printf 'CapEff:\\t0000000000000000\\n'; exit 0; fi\necho "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n`,
    );
    chmodSync(join(bin, 'bwrap'), 0o755);
    const mission = writeCodexMission(join(work, 'mission.yaml'), repo, 'stale-bwrap-1');
    const cacheDir = join(work, 'cache');
    const r = await runCli(['mission', 'run', mission, '--json', '--state-dir', join(work, 'state')], {
      cwd: work,
      env: { PATH: `${bin}:${process.env.PATH}`, UH_CACHE_DIR: cacheDir, FAKE_CODEX_SCENARIO: 'success' },
    });
    expect(r.code, r.stderr).toBe(3);
    const receipt = JSON.parse(r.stdout);
    expect(receipt.status).toBe('blocked');
    expect(receipt.outcome.message).toContain('bwrap: setting up uid map: Permission denied');
    expect(receipt.outcome.hint).toContain('uh doctor');
    expect(existsSync(join(cacheDir, 'bwrap-probe.json'))).toBe(false);
  });
});
