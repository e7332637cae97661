/**
 * `uh doctor` says which backend holds the processes and memory limits here and why (a cgroup v2
 * or v1 one, or rlimits where nothing is delegated), and how each per-mission limit holds (the
 * cgroup, rlimit, the watcher, a sized tmpfs, or none); the v2 probe reads a v2 hierarchy. As the
 * deployment user `uh` (no cgroup delegated to it) the rlimits hold, and `UH_LIMIT_BACKEND=cgroup`
 * there is a core finding and a mission refused as invalid configuration, naming the setting.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chooseLimitBackend, probeCgroupV2 } from '../../src/shared/process/cgroup-probe.js';
import { runCli } from '../support/cli.js';
import { chownTree, DEPLOY_USER, ensureUser, FLEET_USERS, type RunAs } from '../support/fleet.js';
import { makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

async function doctorLimits(
  isolation: string,
  extra: Record<string, string> = {},
  as: RunAs = null,
): Promise<Record<string, { ok: boolean; detail: string; core: boolean }>> {
  const cacheDir = tempDir('uh-ldoc-cache-');
  const state = tempDir('uh-ldoc-state-');
  dirs.push(cacheDir, state);
  chownTree(cacheDir, as);
  chownTree(state, as);
  const env = { UH_CACHE_DIR: cacheDir, UH_ISOLATION: isolation, UH_LIMIT_PROCESSES: '77', REDIS_URL: '', ...extra };
  const result = await runCli(['doctor', '--json', '--state-dir', state], { cwd: state, env, as });
  const findings = JSON.parse(result.stdout).findings as Array<{
    what: string;
    ok: boolean;
    detail: string;
    core: boolean;
  }>;
  return Object.fromEntries(findings.filter((f) => f.what.startsWith('limit')).map((f) => [f.what, f]));
}

const here = chooseLimitBackend('auto');

describe('uh doctor: limits', () => {
  it('isolated: the sandbox own /dev/shm, the host values, the backend', async () => {
    const limits = await doctorLimits('auto');
    // This process's own backend, and why: on this host as root, cgroup v1 pids+memory writable.
    const name = here.kind === 'rlimit' ? 'rlimit (prlimit)' : here.kind;
    expect(limits['limits backend']?.detail.startsWith(`${name}: ${here.reason}`)).toBe(true);
    if (here.kind !== 'rlimit') {
      expect(limits['limit processes']?.detail).toContain('the kernel refuses the fork past it (root included)');
      expect(limits['limit memory']?.detail).toContain('the kernel OOM-kills at it');
    }
    expect(limits['limit processes']?.detail).toMatch(/^77 \(UH_LIMIT_PROCESSES\): /);
    expect(limits['limit shm']).toMatchObject({ ok: true, detail: expect.stringContaining('tmpfs of that size') });
  }, 60_000);

  it("unisolated: /dev/shm is the host's and no limit holds it", async () => {
    const limits = await doctorLimits('off');
    expect(limits['limit shm']).toMatchObject({ ok: false, detail: expect.stringContaining('none') });
    // Unisolated as root, RLIMIT_NPROC would count the host's uid: the cgroup holds it where there is one.
    expect(limits['limit processes']?.detail).toContain(
      here.kind === 'rlimit' ? 'the watcher only' : 'the kernel refuses the fork past it',
    );
  }, 60_000);

  it('UH_LIMIT_BACKEND=rlimit: the rlimits hold, whatever the host delegates', async () => {
    const limits = await doctorLimits('auto', { UH_LIMIT_BACKEND: 'rlimit' });
    expect(limits['limits backend']).toMatchObject({ ok: true, detail: 'rlimit (prlimit): UH_LIMIT_BACKEND=rlimit' });
    expect(limits['limit memory']?.detail).toContain('RLIMIT_DATA');
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

/** As the deployment user (not root), where root runs these tests: no cgroup is delegated to `uh`. */
describe.each(FLEET_USERS.filter((u) => u === DEPLOY_USER).map((u) => [u]))('uh doctor: limits as %s', (user) => {
  it('no delegation: the rlimits hold, and doctor says why', async () => {
    const limits = await doctorLimits('auto', {}, ensureUser(user));
    expect(limits['limits backend']).toMatchObject({ ok: true, core: false });
    expect(limits['limits backend']?.detail).toMatch(/^rlimit \(prlimit\): no delegation: rlimits \(v2: .*; v1: .*\)$/);
    expect(limits['limit processes']?.detail).toContain("RLIMIT_NPROC in the sandbox's user namespace");
  }, 60_000);

  it('UH_LIMIT_BACKEND=cgroup: a core finding, and a mission is refused naming the setting', async () => {
    const as = ensureUser(user);
    const limits = await doctorLimits('auto', { UH_LIMIT_BACKEND: 'cgroup' }, as);
    expect(limits['limits backend']).toMatchObject({ ok: false, core: true });
    expect(limits['limits backend']?.detail).toContain('UH_LIMIT_BACKEND=cgroup: no mission can start here');
    const repo = makeRepo({ 'src/app.txt': 'v1\n' });
    const work = tempDir('uh-ldoc-mission-');
    dirs.push(repo, work);
    const mission = {
      schema_version: 'uh.mission.v0',
      mission_id: 'm-ldoc',
      operation_id: `op-ldoc-${process.pid}`,
      title: 'limits backend',
      objective: 'none',
      repository: { url: repo, ref: 'main' },
      runtime: 'command',
      runtime_config_overrides: { command: { argv: ['/bin/sh', '-c', 'echo ok > src/ok.txt'] } },
      timeout_seconds: 30,
    };
    writeFileSync(join(work, 'mission.json'), JSON.stringify(mission));
    chownTree(repo, as);
    chownTree(work, as);
    const env = { HOME: work, UH_CACHE_DIR: join(work, 'cache'), UH_LIMIT_BACKEND: 'cgroup', REDIS_URL: '' };
    const args = ['mission', 'run', join(work, 'mission.json'), '--state-dir', join(work, 'state')];
    const result = await runCli(args, { cwd: repo, env, as });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('UH_LIMIT_BACKEND=cgroup, but no cgroup can be had here');
  }, 60_000);
});
