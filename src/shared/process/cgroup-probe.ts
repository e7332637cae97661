/**
 * Which backend holds the per-mission processes and memory limits on this host (`UH_LIMIT_BACKEND`,
 * decided once per process; docs/security.md#limits):
 * - `cgroup-v2`: uh's own cgroup (`0::<path>` of /proc/self/cgroup) in a cgroup2 mount offers the
 *   `pids` and `memory` controllers, enables them for its children and lets uh create one: what a
 *   systemd scope with `Delegate=yes` (uh in a leaf of it) or a delegated subtree gives.
 * - `cgroup-v1`: the v1 `pids` and `memory` hierarchies are mounted and uh may create a child of its
 *   own cgroup in each (root on a v1 or hybrid host, or a v1 subtree chowned to uh's user).
 * - `rlimit`: neither; the rlimits and the watcher hold (mission-limits.ts), and the reason says why.
 * `auto` takes the first of the three that holds; `cgroup` insists on a cgroup (else a config error
 * at start); `rlimit` never looks. Writability is tried, never guessed: a probe cgroup is made and
 * removed. Never throws.
 */
import { accessSync, constants, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type CgroupProbe = { delegated: true; path: string } | { delegated: false; reason: string };

export type LimitBackendMode = 'auto' | 'cgroup' | 'rlimit';
export type CgroupController = 'pids' | 'memory';

/** A cgroup backend: where uh makes a mission's cgroups, and why it holds here (`uh doctor`). */
export type CgroupBackend =
  | {
      kind: 'cgroup-v2';
      /** uh's own cgroup: each mission's cgroup is a child of it. */
      parent: string;
      /** The controllers enabled for the children (both, on a host the probe chose). */
      controllers: readonly CgroupController[];
      reason: string;
    }
  | { kind: 'cgroup-v1'; pids: string; memory: string; reason: string };

export type LimitBackendChoice = CgroupBackend | { kind: 'rlimit'; reason: string };

const read = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

/** Mount points of the cgroup hierarchies: cgroup2 ones, and v1 ones by controller. */
export function cgroupMounts(mounts = '/proc/mounts'): { v2: string[]; v1: Map<string, string> } {
  const out = { v2: [] as string[], v1: new Map<string, string>() };
  for (const line of (read(mounts) ?? '').split('\n')) {
    const [, point, type, options] = line.split(' ');
    if (point === undefined || options === undefined) continue;
    if (type === 'cgroup2') out.v2.push(point);
    if (type === 'cgroup') for (const o of options.split(',')) if (o === 'pids' || o === 'memory') out.v1.set(o, point);
  }
  return out;
}

/** uh's own cgroup path per hierarchy: `''` for v2, the controller's name for v1 (from /proc/self/cgroup). */
export function ownCgroups(self = '/proc/self/cgroup'): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of (read(self) ?? '').split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    for (const c of (match[1] as string).split(',')) out.set(c, (match[2] as string).trim());
  }
  return out;
}

/** Can uh make a child cgroup under `dir`? Tried: made and removed. */
function canCreateChild(dir: string): string | null {
  const probe = join(dir, `uh-probe-${process.pid}`);
  try {
    mkdirSync(probe);
    rmdirSync(probe);
    return null;
  } catch (error) {
    return `${dir} is not writable by uh (${(error as NodeJS.ErrnoException).code ?? 'error'}: no delegation)`;
  }
}

/** Does this host delegate cgroup v2 to uh? Its own cgroup must offer memory and pids and be writable. */
export function probeCgroupV2(root = '/sys/fs/cgroup', self = '/proc/self/cgroup'): CgroupProbe {
  const line = (read(self) ?? '').split('\n').find((l) => l.startsWith('0::'));
  if (line === undefined) return { delegated: false, reason: 'no cgroup v2 membership in /proc/self/cgroup' };
  if (read(join(root, 'cgroup.controllers')) === null)
    return { delegated: false, reason: `${root} is not a cgroup v2 hierarchy (cgroup v1 or hybrid)` };
  const path = join(root, line.slice(3).trim()).replace(/(.)\/$/, '$1');
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

/** The v2 backend, or why not: the controllers must be on for uh's children (a leaf holding uh cannot). */
function probeV2(mounts: string[]): LimitBackendChoice {
  const root = mounts.find((m) => read(join(m, 'cgroup.controllers')) !== null);
  if (root === undefined) return { kind: 'rlimit', reason: 'no cgroup2 mount' };
  const probe = probeCgroupV2(root);
  if (!probe.delegated) return { kind: 'rlimit', reason: probe.reason };
  const enabled = (read(join(probe.path, 'cgroup.subtree_control')) ?? '').split(/\s+/);
  if (!enabled.includes('pids') || !enabled.includes('memory')) {
    try {
      writeFileSync(join(probe.path, 'cgroup.subtree_control'), '+pids +memory');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      return {
        kind: 'rlimit',
        reason: `${probe.path} cannot enable pids and memory for its children (${code}: uh must run in a leaf of a delegated subtree)`,
      };
    }
  }
  const unwritable = canCreateChild(probe.path);
  if (unwritable !== null) return { kind: 'rlimit', reason: unwritable };
  return {
    kind: 'cgroup-v2',
    parent: probe.path,
    controllers: ['pids', 'memory'],
    reason: `cgroup v2 delegated at ${probe.path}`,
  };
}

/** The v1 backend, or why not: both hierarchies mounted and a child of uh's cgroup makeable in each. */
function probeV1(mounts: Map<string, string>, own: Map<string, string>): LimitBackendChoice {
  const dirs: Partial<Record<CgroupController, string>> = {};
  for (const c of ['pids', 'memory'] as const) {
    const point = mounts.get(c);
    if (point === undefined) return { kind: 'rlimit', reason: `no cgroup v1 ${c} hierarchy` };
    const dir = join(point, own.get(c) ?? '/').replace(/(.)\/$/, '$1');
    const unwritable = canCreateChild(dir);
    if (unwritable !== null) return { kind: 'rlimit', reason: unwritable };
    dirs[c] = dir;
  }
  const who = process.getuid?.() === 0 ? 'root' : `uid ${process.getuid?.() ?? '?'}`;
  return {
    kind: 'cgroup-v1',
    pids: dirs.pids as string,
    memory: dirs.memory as string,
    reason: `cgroup v1 pids+memory writable (${who})`,
  };
}

const chosen = new Map<LimitBackendMode, LimitBackendChoice>();

/** The backend for `mode`, probed once per process. */
export function chooseLimitBackend(mode: LimitBackendMode): LimitBackendChoice {
  const known = chosen.get(mode);
  if (known) return known;
  let choice: LimitBackendChoice;
  if (mode === 'rlimit') choice = { kind: 'rlimit', reason: 'UH_LIMIT_BACKEND=rlimit' };
  else {
    const mounts = cgroupMounts();
    const own = ownCgroups();
    const v2 = probeV2(mounts.v2);
    const v1 = v2.kind === 'rlimit' ? probeV1(mounts.v1, own) : v2;
    choice =
      v1.kind === 'rlimit'
        ? { kind: 'rlimit', reason: `no delegation: rlimits (v2: ${v2.reason}; v1: ${v1.reason})` }
        : v1;
  }
  chosen.set(mode, choice);
  return choice;
}
