/**
 * An agent in an overlay sandbox (bwrap nested in the overlay's user namespace,
 * `overlay-isolation.ts`) sees the merged tree and writes only its upper layer: no capability, no
 * way to unmount the overlay or remount it, the base and the upper layer themselves hidden (the
 * cache dir is masked), the base never written. Run as uh's uid here (root in this container),
 * the row the deployment's non-root user shares: inside the launcher both are uid 0.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GIT_PROCESSES } from '../../src/workers/git-path.js';
import { resolveInMirror } from '../../src/workers/sandbox/mirror-cache.js';
import { overlayBwrapArgv } from '../../src/workers/sandbox/overlay-isolation.js';
import { overlayLaunchArgv, probeOverlay } from '../../src/workers/sandbox/overlay-mount.js';
import { bwrapArgv } from '../../src/shared/process/bwrap-argv.js';
import { createOverlaySandbox } from '../../src/workers/sandbox/overlay-sandbox.js';
import { probeBwrap } from '../../src/workers/sandbox/isolation.js';
import { makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

let unshare = '';
let bwrap = '';
beforeAll(() => {
  const scratch = tempDir('uh-ovl-sec-probe-');
  dirs.push(scratch);
  const probe = probeOverlay(scratch, process.env.PATH);
  if (!probe.ok) throw new Error(`no overlay here: ${probe.reason}`);
  unshare = probe.unshare;
  const found = probeBwrap(process.env.PATH);
  if (!found.ok) throw new Error(`no bwrap here: ${found.reason}`);
  bwrap = found.path;
});

describe('an agent in an overlay sandbox', () => {
  it('writes its upper layer only, holds no capability, and can neither unmount nor reach the layers', async () => {
    const repo = makeRepo({ 'README.md': '# base\n', 'src/a.txt': 'a\n' });
    dirs.push(repo);
    const cacheDir = tempDir('uh-ovl-sec-cache-');
    dirs.push(cacheDir);
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const sandbox = await createOverlaySandbox(cacheDir, mirror, commit, 'op-sec', new Date());
    const script = [
      'grep CapEff /proc/self/status',
      'cat README.md',
      'echo agent > README.md; rm src/a.txt; echo new > new.txt',
      `umount "$PWD" 2>/dev/null && echo UNMOUNTED`,
      `mount -t tmpfs none "$PWD" 2>/dev/null && echo REMOUNTED`,
      `ls "${sandbox.layers.upper}" "${sandbox.layers.lower}" 2>/dev/null && echo LAYERS-VISIBLE`,
      'ls -a',
    ].join('\n');
    const plan = {
      bwrap,
      masked: [cacheDir],
      home: null,
      tmpfsBytes: null,
      readable: [],
      writable: [sandbox.path],
      network: false,
      env: { PATH: '/usr/bin:/bin' },
      cwd: sandbox.path,
    };
    // The control: bwrap as a non-root uh would call it on the host (no user namespace flags) keeps
    // the launcher's capabilities and mounts over the sandbox: the defence under test is those flags.
    const other = await createOverlaySandbox(cacheDir, mirror, commit, 'op-sec-control', new Date());
    const control = overlayLaunchArgv(
      unshare,
      other.layers,
      bwrapArgv({ ...plan, writable: [other.path], cwd: other.path, uid: 4242 }, ['/bin/sh', '-c', script]),
    );
    const unguarded = spawnSync(control[0]!, control.slice(1), { encoding: 'utf8' });
    expect(unguarded.stdout).not.toMatch(/CapEff:\s*0+\n/);
    expect(unguarded.stdout).toMatch(/UNMOUNTED|REMOUNTED/);
    const argv = overlayBwrapArgv(unshare, sandbox.layers, plan, ['/bin/sh', '-c', script]);
    const run = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/CapEff:\s*0+\n/);
    expect(run.stdout).toContain('# base');
    expect(run.stdout).not.toMatch(/UNMOUNTED|REMOUNTED|LAYERS-VISIBLE/);
    expect(run.stdout).toContain('.git');
    // The writes are in the upper layer; the base is as checked out; the host's mount point is empty.
    expect(readFileSync(join(sandbox.layers.upper, 'README.md'), 'utf8')).toBe('agent\n');
    expect(readFileSync(join(sandbox.layers.upper, 'new.txt'), 'utf8')).toBe('new\n');
    expect(readFileSync(join(sandbox.base.tree, 'README.md'), 'utf8')).toBe('# base\n');
    expect(existsSync(join(sandbox.base.tree, 'src', 'a.txt'))).toBe(true);
    expect(existsSync(join(sandbox.path, 'README.md'))).toBe(false);
  }, 60_000);
});
