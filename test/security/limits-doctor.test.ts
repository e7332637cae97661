/**
 * `uh doctor` says how each per-mission limit holds on this host (cgroup v2, rlimit, the watcher,
 * a sized tmpfs, or none), and whether cgroup v2 is delegated; the probe reads a v2 hierarchy.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { probeCgroupV2 } from '../../src/shared/process/cgroup-probe.js';
import { runCli } from '../support/cli.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

async function doctorLimits(isolation: string): Promise<Record<string, { ok: boolean; detail: string }>> {
  const cacheDir = tempDir('uh-ldoc-cache-');
  const state = tempDir('uh-ldoc-state-');
  dirs.push(cacheDir, state);
  const env = { UH_CACHE_DIR: cacheDir, UH_ISOLATION: isolation, UH_LIMIT_PROCESSES: '77', REDIS_URL: '' };
  const result = await runCli(['doctor', '--json', '--state-dir', state], { cwd: state, env });
  const findings = JSON.parse(result.stdout).findings as Array<{ what: string; ok: boolean; detail: string }>;
  return Object.fromEntries(findings.filter((f) => f.what.startsWith('limit')).map((f) => [f.what, f]));
}

describe('uh doctor: limits', () => {
  it('isolated: the sandbox own /dev/shm, the host values, the backend', async () => {
    const limits = await doctorLimits('auto');
    expect(limits['limits backend']?.detail).toMatch(/^rlimit \(prlimit\); cgroup v2 /);
    expect(limits['limit processes']?.detail).toMatch(/^77 \(UH_LIMIT_PROCESSES\): /);
    expect(limits['limit shm']).toMatchObject({ ok: true, detail: expect.stringContaining('tmpfs of that size') });
  }, 60_000);

  it("unisolated: /dev/shm is the host's and no limit holds it", async () => {
    const limits = await doctorLimits('off');
    expect(limits['limit shm']).toMatchObject({ ok: false, detail: expect.stringContaining('none') });
    expect(limits['limit processes']?.detail).toContain('the watcher only');
  }, 60_000);

  it('the cgroup v2 probe: delegated where uh own cgroup offers memory and pids, else why not', () => {
    const root = tempDir('uh-ldoc-cg-');
    dirs.push(root);
    const self = join(root, 'self-cgroup');
    writeFileSync(self, '0::/user.slice/uh.scope\n');
    expect(probeCgroupV2(root, self)).toMatchObject({
      delegated: false,
      reason: expect.stringContaining('not a cgroup v2'),
    });
    writeFileSync(join(root, 'cgroup.controllers'), 'cpu memory pids\n');
    mkdirSync(join(root, 'user.slice/uh.scope'), { recursive: true });
    writeFileSync(join(root, 'user.slice/uh.scope/cgroup.controllers'), 'cpu\n');
    expect(probeCgroupV2(root, self)).toMatchObject({ reason: expect.stringContaining('memory and pids') });
    writeFileSync(join(root, 'user.slice/uh.scope/cgroup.controllers'), 'memory pids\n');
    expect(probeCgroupV2(root, self)).toEqual({ delegated: true, path: join(root, 'user.slice/uh.scope') });
  });
});
