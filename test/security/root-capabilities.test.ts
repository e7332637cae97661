/**
 * A hostile agent on a root host (CI containers, self-hosted runners run uh as root). Run as
 * root, bubblewrap makes no user namespace of its own: without uh's `--unshare-user --uid 65534
 * --cap-drop ALL` (shared/process/bwrap-probe.ts `userNamespaceArgs`) the child keeps every
 * capability, unmounts the tmpfs that masks the cache dir and reads the receipt key behind it.
 * The contrast runs that plain bwrap first, so this file shows the defence is what stops it; then
 * the same attacks through uh (inline and through a worker, as root and as the deployment's user
 * `uh`; not root: as the current user) find no capability, the masks intact, the host untouched,
 * and the verdict the agent's in-scope change earns.
 *
 * `nobody` in its namespace, the agent run by root still has kernel uid 0, and the owner bits of
 * root's files apply to it: uh hides what only root may read (workers/sandbox/root-only-paths.ts).
 * As root, the test plants a root-only SSH host key and a root-only directory in /etc and a file in
 * /root (removed afterwards) beside the real /etc/shadow and /etc/gshadow; none is readable to
 * the agent (root's home is a tmpfs that shows only the programs on PATH installed under it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentUid,
  commandMission,
  fleetTable,
  runMission,
  signingKeys,
  startFleet,
  stopFleet,
  type Fleet,
} from '../support/fleet.js';
import { checkoutFingerprint } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir } from '../support/temp.js';
import { requireBwrap, treeFingerprint } from './isolation-helpers.js';

const isRoot = process.getuid?.() === 0;
const KEY = 'k'.repeat(48);
/** What the root-only files planted in /etc hold: never in the agent's diff. */
const ROOT_SECRET = `uh-root-only-${process.pid}`;
/** Planted as root: an SSH host key (0600) and a root-only directory (0700), both in /etc. */
const HOST_KEY = existsSync('/etc/ssh')
  ? `/etc/ssh/ssh_host_uhtest${process.pid}_key`
  : `/etc/uh-test-ssh_host_${process.pid}_key`;
const ROOT_DIR = `/etc/uh-test-private-${process.pid}`;
/** Planted as root in root's home (0644: only /root's own mode keeps it from other users). */
const ROOT_HOME_FILE = `/root/.uh-test-secret-${process.pid}`;
let redis: TestRedis;

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
try read-shadow 'grep -q . /etc/shadow'
try read-gshadow 'grep -q . /etc/gshadow'
try read-host-key 'grep -q . "$T_HOST_KEY"'
try list-root-dir 'test -n "$(ls -A "$T_ROOT_DIR")"'
try read-root-home 'grep -q . "$T_ROOT_HOME_FILE"'
cat /etc/shadow /etc/gshadow "$T_HOST_KEY" "$T_ROOT_DIR"/* "$T_ROOT_HOME_FILE" /etc/ssh/ssh_host_*_key > stolen.txt 2>/dev/null
echo done > result.txt
`;

beforeAll(async () => {
  requireBwrap();
  redis = await startTestRedis('rootcaps');
  if (!isRoot) return;
  writeFileSync(HOST_KEY, `${ROOT_SECRET} key\n`, { mode: 0o600 });
  mkdirSync(ROOT_DIR, { mode: 0o700 });
  writeFileSync(join(ROOT_DIR, 'token'), `${ROOT_SECRET} token\n`, { mode: 0o644 });
  if (existsSync('/root')) writeFileSync(ROOT_HOME_FILE, `${ROOT_SECRET} home\n`, { mode: 0o644 });
});
afterAll(async () => {
  rmSync(HOST_KEY, { force: true });
  rmSync(ROOT_HOME_FILE, { force: true });
  removeDir(ROOT_DIR);
  await redis?.cleanup();
});

describe('a hostile agent on a root host', () => {
  it('contrast: plain bwrap as root keeps every capability and unmounts the mask over the secret', () => {
    // Outside /tmp, as on a real host: a cache under /tmp would be hidden by the private /tmp
    // anyway, and the attack on its own mask would never be tried.
    const cacheDir = mkdtempSync('/var/tmp/uh-root-cache-');
    try {
      writeFileSync(join(cacheDir, 'fleet-secret'), KEY, { mode: 0o600 });
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
    } finally {
      removeDir(cacheDir);
    }
  });

  it('contrast: as root, a user namespace and no capabilities still leave root-only files readable', () => {
    const ns = ['--unshare-user', '--uid', '65534', '--gid', '65534', '--cap-drop', 'ALL'];
    const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', ...ns, '--unshare-pid'];
    const r = spawnSync('bwrap', [...args, 'sh', '-c', `id -u; cat ${HOST_KEY}`], { encoding: 'utf8' });
    expect(r.stdout).toMatch(/^65534\n/);
    // What uh's plan hides below: as root the owner bits of root's files still apply to the agent.
    if (isRoot) expect(r.stdout).toContain(ROOT_SECRET);
    else expect(r.stdout).not.toContain(ROOT_SECRET);
  });
});

describe.each(fleetTable(['inline', 'worker'], ['auto']))(
  'a hostile agent on a root host, through uh (%s, UH_ISOLATION=%s, as %s)',
  (mode, isolation, user) => {
    let f: Fleet;

    beforeAll(async () => {
      f = await startFleet({
        mode,
        isolation,
        user,
        redis,
        tag: 'rootcaps',
        files: { 'README.md': '# demo\n' },
        cacheOutsideTmp: true,
        prepare: (fleet) => {
          writeFileSync(join(fleet.home, '.bashrc'), '# mine\n');
          writeFileSync(join(fleet.cacheDir, 'fleet-secret'), KEY, { mode: 0o600 });
        },
      });
    }, 90_000);
    afterAll(() => stopFleet(f));

    it('no capability, uid nobody as root, root-only files hidden, the masks and the host intact, the verdict stands', async () => {
      const env = {
        T_CACHE: f.cacheDir,
        T_REPO: f.repo,
        T_HOME: f.home,
        T_HOST_KEY: HOST_KEY,
        T_ROOT_DIR: ROOT_DIR,
        T_ROOT_HOME_FILE: ROOT_HOME_FILE,
      };
      const check = { name: 'result', argv: ['test', '-f', 'result.txt'], timeout_seconds: 30 };
      const mission = commandMission(f, ATTACKS, { sandbox: { env }, verification: [check] });
      const before = { checkout: checkoutFingerprint(f.repo), home: treeFingerprint(f.home) };
      const { receipt, operationDir } = await runMission(f, mission);
      expect(receipt.isolation).toMatchObject({ kind: 'bwrap', reason: null });
      expect(receipt.verdict).toBe('verified');
      const patch = readFileSync(join(operationDir, 'diff.patch'), 'utf8');
      expect(patch).toMatch(/^\+CapEff:\s*0{16}$/m);
      expect(patch).toMatch(new RegExp(`^\\+${agentUid(f)}$`, 'm'));
      expect(patch).not.toContain(KEY);
      expect(patch).not.toContain(ROOT_SECRET);
      expect(patch).not.toMatch(/^\+root:/m); // no line of /etc/shadow or /etc/gshadow
      // Each attack failed: escaped.txt names none but the write to $HOME, which lands in the agent's
      // private home (the host's is asserted untouched below).
      const escaped = /b\/escaped\.txt\n(?:.*\n)*?@@.*\n((?:\+.*\n?)*)/.exec(patch)?.[1] ?? '';
      expect(
        escaped.split('\n').filter((l) => l && l !== '+write-home'),
        patch,
      ).toEqual([]);
      expect(existsSync('/etc/uh-root-pwned')).toBe(false);
      expect({ checkout: checkoutFingerprint(f.repo), home: treeFingerprint(f.home) }).toEqual(before);
      expect(readFileSync(join(f.cacheDir, 'fleet-secret'), 'utf8')).toBe(KEY);
      const pem = signingKeys(f)['receipt-signing.pem'] ?? '';
      expect(pem).toContain('PRIVATE KEY');
      expect(patch).not.toContain(pem.split('\n')[1]);
    });
  },
);
