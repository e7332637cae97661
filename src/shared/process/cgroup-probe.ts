/**
 * Does this host delegate cgroup v2 to uh (`uh doctor`)? A pure v2 hierarchy at /sys/fs/cgroup,
 * uh's own cgroup (`0::<path>` of /proc/self/cgroup) offering the `memory` and `pids` controllers,
 * and writable by uh: what a systemd scope with `Delegate=yes` or a delegated subtree gives.
 * Never throws; the answer names what is missing.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type CgroupProbe = { delegated: true; path: string } | { delegated: false; reason: string };

const read = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

export function probeCgroupV2(root = '/sys/fs/cgroup', self = '/proc/self/cgroup'): CgroupProbe {
  const line = (read(self) ?? '').split('\n').find((l) => l.startsWith('0::'));
  if (line === undefined) return { delegated: false, reason: 'no cgroup v2 membership in /proc/self/cgroup' };
  if (read(join(root, 'cgroup.controllers')) === null)
    return { delegated: false, reason: `${root} is not a cgroup v2 hierarchy (cgroup v1 or hybrid)` };
  const path = join(root, line.slice(3).trim());
  const controllers = (read(join(path, 'cgroup.controllers')) ?? '').split(/\s+/);
  const missing = ['memory', 'pids'].filter((c) => !controllers.includes(c));
  if (missing.length > 0) return { delegated: false, reason: `${path} lacks the ${missing.join(' and ')} controller` };
  try {
    accessSync(path, constants.W_OK);
  } catch {
    return { delegated: false, reason: `${path} is not writable by uh (no delegation)` };
  }
  return { delegated: true, path };
}
