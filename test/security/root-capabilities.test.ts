/**
 * A hostile agent on a root host (CI containers, self-hosted runners run uh as root). Run as
 * root, bubblewrap makes no user namespace of its own: without uh's `--unshare-user --uid 65534
 * --cap-drop ALL` (shared/process/bwrap-probe.ts `userNamespaceArgs`) the child keeps every
 * capability, unmounts the tmpfs that masks the cache dir and reads the receipt key behind it.
 * The contrast runs that plain bwrap first, so this file shows the defence is what stops it; then
 * the same attacks through `uh mission run` find no capability, the masks intact, the host
 * untouched, and the verdict the agent's in-scope change earns.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { checkoutFingerprint, makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';
import { hostileMission, requireBwrap, treeFingerprint } from './isolation-helpers.js';

const isRoot = process.getuid?.() === 0;
const created: string[] = [];
let repo: string;
let cacheDir: string;
let home: string;
const KEY = 'k'.repeat(48);

/** Each attack appends its name to escaped.txt when it succeeded; caps.txt is what the agent holds. */
const ATTACKS = `
try() { name="$1"; shift; if sh -c "$*" >/dev/null 2>&1; then echo "$name" >> escaped.txt; fi; }
grep CapEff /proc/self/status > caps.txt
id -u > uid.txt
try remount 'mount -o remount,rw / && echo x > /etc/uh-root-pwned'
try umount-mask 'umount -l "$T_CACHE" && cat "$T_CACHE/fleet-secret"'
try read-key 'cat "$T_CACHE/fleet-secret"'
try nested-userns 'unshare -rm sh -c "umount -l \\"$T_CACHE\\" && cat \\"$T_CACHE/fleet-secret\\""'
try write-checkout 'echo x > "$T_REPO/pwned"'
try write-home 'echo x > "$T_HOME/.bashrc"'
try mknod 'mknod /dev/uh-sda b 8 0'
try chroot 'chroot / true'
echo done > result.txt
`;

beforeAll(() => {
  requireBwrap();
  repo = makeRepo({ 'README.md': '# demo\n' });
  // Outside /tmp, as on a real host: a cache under /tmp would be hidden by the private /tmp
  // anyway, and the attack on its own mask would never be tried.
  cacheDir = mkdtempSync('/var/tmp/uh-root-cache-');
  home = tempDir('uh-root-home-');
  writeFileSync(join(home, '.bashrc'), '# mine\n');
  writeFileSync(join(cacheDir, 'fleet-secret'), KEY, { mode: 0o600 });
  created.push(repo, cacheDir, home);
});
afterAll(() => created.forEach(removeDir));

describe('a hostile agent on a root host', () => {
  it('contrast: plain bwrap as root keeps every capability and unmounts the mask over the secret', () => {
    const script = `grep CapEff /proc/self/status; umount -l "${cacheDir}" 2>/dev/null && cat "${cacheDir}/fleet-secret"`;
    const mask = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', cacheDir, '--unshare-pid'];
    const plain = spawnSync('bwrap', [...mask, 'sh', '-c', script], { encoding: 'utf8', timeout: 10_000 }).stdout;
    if (isRoot) {
      expect(plain).not.toMatch(/CapEff:\s*0{16}\n/);
      expect(plain).toContain(KEY);
    } else {
      // Unprivileged, bwrap makes its own user namespace and drops every capability: uh adds nothing.
      expect(plain).toMatch(/CapEff:\s*0{16}\n/);
      expect(plain).not.toContain(KEY);
    }
  });

  it('through uh mission run: no capability, uid nobody as root, the masks and the host intact, the verdict stands', async () => {
    const stateDir = tempDir('uh-root-state-');
    created.push(stateDir);
    const env = { T_CACHE: cacheDir, T_REPO: repo, T_HOME: home };
    const check = { name: 'result', argv: ['test', '-f', 'result.txt'], timeout_seconds: 30 };
    const { path } = hostileMission(repo, ATTACKS, { sandbox: { env }, verification: [check] });
    const before = { checkout: checkoutFingerprint(repo), home: treeFingerprint(home) };
    const r = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir, HOME: home },
    });
    expect(r.code, r.stderr).toBe(0);
    const receipt = JSON.parse(r.stdout);
    expect(receipt.isolation).toMatchObject({ kind: 'bwrap', reason: null });
    expect(receipt.verdict).toBe('verified');
    const patch = readFileSync(join(stateDir, 'operations', receipt.operation_id, 'diff.patch'), 'utf8');
    expect(patch).toMatch(/^\+CapEff:\s*0{16}$/m);
    if (isRoot) expect(patch).toMatch(/^\+65534$/m);
    expect(patch).not.toContain(KEY);
    // Each attack failed: escaped.txt names none but the write to $HOME, which lands in the agent's
    // private home (the host's is asserted untouched below).
    const escaped = /b\/escaped\.txt\n(?:.*\n)*?@@.*\n((?:\+.*\n?)*)/.exec(patch)?.[1] ?? '';
    expect(
      escaped.split('\n').filter((l) => l && l !== '+write-home'),
      patch,
    ).toEqual([]);
    expect(existsSync('/etc/uh-root-pwned')).toBe(false);
    expect({ checkout: checkoutFingerprint(repo), home: treeFingerprint(home) }).toEqual(before);
    expect(readFileSync(join(cacheDir, 'fleet-secret'), 'utf8')).toBe(KEY);
  });
});
