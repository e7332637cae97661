/**
 * The bubblewrap command line that wraps one child: pure, no I/O. The host's root is mounted
 * read-only; `masked` paths are hidden behind an empty tmpfs (the cache dir, the state dir, the
 * user's checkout, the real home; none that a later tmpfs hides anyway); then a private /tmp and a private home, each a fresh tmpfs
 * capped at `tmpfsBytes`, `readable` paths read-only and `writable` paths read-write, in that
 * order, so a path bound later shows through a mask laid earlier; last, a read-only /dev/null
 * over each `hidden` file (root-only files of a root host), which no bind re-exposes. Nothing of the private /tmp
 * and home touches the host's disk: they vanish with the child's mount namespace. The child gets
 * its own PID and IPC namespaces, its own session, dies with its parent, and sees exactly `env`
 * (`--clearenv` + `--setenv`). Run by root, it also gets a user namespace, uid and gid `nobody`
 * and no capabilities (`userNamespaceArgs`). With `shmBytes`, `/dev` is read-only and `/dev/shm` a
 * tmpfs of that size; `limitPrefix` (prlimit) starts the child under the mission's rlimits, inside
 * the user namespace, so RLIMIT_NPROC counts the sandbox's tasks only.
 */
import { byCodeUnit } from '../compare.js';
import { bridgedArgv, egressBwrapArgs, egressEnv, type EgressBridge } from './egress-bridge.js';
import { ownUserNamespace, userNamespaceArgs } from './bwrap-probe.js';

export interface BwrapPlan {
  /** The bwrap executable. */
  bwrap: string;
  /** Hidden behind an empty tmpfs (paths that do not exist are skipped by the caller). */
  masked: readonly string[];
  /** Where the child's private home is mounted (its HOME), or null when it has none. */
  home: string | null;
  /** The size cap of the private /tmp and home (`--size`), or null where bwrap lacks `--size` (before 0.7). */
  tmpfsBytes: number | null;
  /**
   * The size of the child's own `/dev/shm` (a tmpfs; `/dev` itself then read-only, so nothing
   * else under it fills memory), or null: `/dev/shm` a directory of bwrap's unsized `/dev`.
   */
  shmBytes?: number | null;
  /** Put before the child's argv inside the sandbox: the rlimits' `prlimit … --` (mission-limits.ts). */
  limitPrefix?: readonly string[];
  /** Bound read-only at the same path, over the masks. */
  readable: readonly string[];
  /** Bound read-write at the same path, over the masks and the readable binds. */
  writable: readonly string[];
  /** Files covered by a read-only /dev/null, over everything else (existing files only). */
  hidden?: readonly string[];
  /** false: `--unshare-net` (only a loopback device inside). */
  network: boolean;
  /** Egress mode: `--unshare-net`, the child started by the bridge to uh's proxy (egress-bridge.ts). */
  egress?: EgressBridge | null;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** The uid uh runs as (root gets a user namespace and no capabilities); unset: this process's. */
  uid?: number;
  /**
   * Always a user namespace of its own with these ids and no capabilities, whatever `uid` (bwrap
   * started where uh is root of a namespace, as in an overlay sandbox's: overlay-isolation.ts).
   */
  userNs?: { uid: number; gid: number };
}

/** `UH_ISOLATION_TMPFS_BYTES` unset: each private /tmp and home holds at most 1 GiB. */
export const DEFAULT_TMPFS_BYTES = 1024 ** 3;

const byDepth = (paths: readonly string[]): string[] =>
  [...new Set(paths)].sort((a, b) => a.split('/').length - b.split('/').length || byCodeUnit(a, b));

const within = (path: string, dir: string): boolean => path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/**
 * The masks worth a mount: one inside another mask, or inside the private /tmp or home (laid
 * after the masks), is hidden by that tmpfs anyway (a state dir under /tmp, a cache under home).
 */
function neededMasks(plan: BwrapPlan): string[] {
  const covers = tmpfsCovers(plan);
  return byDepth(plan.masked).filter((path) => !covers.some((dir) => dir !== path && within(path, dir)));
}

/** Every directory a tmpfs of the sandbox covers: the masks, the private /tmp, the home. */
const tmpfsCovers = (plan: BwrapPlan): string[] => [...plan.masked, '/tmp', ...(plan.home === null ? [] : [plan.home])];

/** True when a tmpfs of the sandbox covers `path`. */
function shadowed(plan: BwrapPlan, path: string): boolean {
  return tmpfsCovers(plan).some((dir) => path === dir || within(path, dir));
}

export function bwrapArgv(plan: BwrapPlan, argv: readonly string[]): string[] {
  const out = [plan.bwrap, '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  const shm = plan.shmBytes ?? null;
  if (shm !== null) out.push('--remount-ro', '/dev', '--size', String(shm), '--tmpfs', '/dev/shm');
  for (const path of neededMasks(plan)) out.push('--tmpfs', path);
  const size = plan.tmpfsBytes === null ? [] : ['--size', String(plan.tmpfsBytes)];
  for (const path of plan.home === null ? ['/tmp'] : ['/tmp', plan.home]) out.push(...size, '--tmpfs', path);
  for (const path of byDepth(plan.readable)) out.push('--ro-bind-try', path, path);
  for (const path of byDepth(plan.writable)) out.push('--bind-try', path, path);
  for (const path of plan.hidden ?? []) out.push('--ro-bind', '/dev/null', path);
  const user = plan.userNs ? ownUserNamespace(plan.userNs) : userNamespaceArgs(plan.uid);
  out.push(...user, '--unshare-pid', '--unshare-ipc', '--die-with-parent', '--new-session');
  const egress = plan.egress ?? null;
  if (egress) out.push(...egressBwrapArgs(egress, (path) => shadowed(plan, path)));
  else if (!plan.network) out.push('--unshare-net');
  out.push('--clearenv');
  for (const [key, value] of Object.entries({ ...plan.env, ...(egress ? egressEnv(egress) : {}) })) {
    if (value !== undefined) out.push('--setenv', key, value);
  }
  const limited = [...(plan.limitPrefix ?? []), ...argv];
  out.push('--chdir', plan.cwd, '--', ...(egress ? bridgedArgv(egress, limited) : limited));
  return out;
}
