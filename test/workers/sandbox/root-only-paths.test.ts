import { describe, expect, it } from 'vitest';
import { rootOnly } from '../../../src/workers/sandbox/root-only-paths.js';

const file = (uid: number, gid: number, mode: number) => ({
  uid,
  gid,
  mode: 0o100000 | mode,
  isDirectory: () => false,
});
const dir = (uid: number, gid: number, mode: number) => ({ uid, gid, mode: 0o040000 | mode, isDirectory: () => true });

describe('rootOnly: what the agent of a root host (kernel uid 0, no capabilities) reads and no other user does', () => {
  it.each([
    ['/etc/shadow 0640 root:shadow', file(0, 42, 0o640), true],
    ['an SSH host key 0600 root:root', file(0, 0, 0o600), true],
    ['0640 postgres:root (the group bits apply)', file(105, 0, 0o640), true],
    ['/etc/passwd 0644 root:root (world-readable)', file(0, 0, 0o644), false],
    ["0600 postgres:postgres (not the agent's)", file(105, 105, 0o600), false],
    ['0040 root:root (the owner bits apply, and deny)', file(0, 0, 0o040), false],
    ['/root 0700 root:root', dir(0, 0, 0o700), true],
    ['/etc/ssl/private 0710 root:ssl-cert', dir(0, 111, 0o710), true],
    ['/var/lib/docker 0711 root:root (others may enter)', dir(0, 0, 0o711), false],
    ['/etc 0755 root:root', dir(0, 0, 0o755), false],
  ])('%s: %s', (_name, st, expected) => {
    expect(rootOnly(st)).toBe(expected);
  });
});
