/**
 * Per-mission resource limits (docs/security.md "Limits"): how many processes, how much memory
 * and `/dev/shm`, how many bytes and entries in the worktree. Pure: the host's values (config,
 * `UH_LIMIT_*`), a mission's request that may only lower them, how each limit holds on this host,
 * and the `prlimit` prefix that sets the rlimits on a child (Node cannot set them on a child
 * itself). The watcher that samples what the rlimits cannot count lives with the pipeline
 * (src/workers/pipeline/limits-watch.ts).
 *
 * How each limit holds (`LimitMechanism`), on the cgroup backend (`UH_LIMIT_BACKEND`,
 * cgroup-probe.ts; one cgroup per phase: mission-cgroup.ts):
 * - processes: the cgroup's `pids.max`, refused by the kernel at fork (root included);
 * - memory: the cgroup's `memory.max` (v2) or `memory.limit_in_bytes` (v1), OOM-killed at the limit;
 * and on the rlimit backend:
 * - processes: RLIMIT_NPROC set inside the sandbox's user namespace counts that namespace's tasks
 *   only; as root the namespace's uid maps to uid 0, whose count the kernel never enforces, and
 *   unisolated the count is the whole host uid's: there the watcher alone holds it (sampled).
 * - memory: RLIMIT_DATA at twice the limit per process (a burst between samples stays bounded),
 *   the watcher holding the sum of the tree's resident memory at the limit.
 * - shm: the sandbox's own `/dev/shm`, a tmpfs of that size (bwrap `--size`, 0.7 and later).
 * - worktree bytes and entries: RLIMIT_FSIZE caps one file at the byte limit; the watcher samples
 *   the totals while the agent runs and a walk after it exits decides.
 */

export const LIMIT_NAMES = ['processes', 'memory', 'shm', 'worktree_bytes', 'worktree_files'] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

export interface MissionLimits {
  /** Tasks (threads count, as the kernel counts them) in the sandbox at once. */
  readonly processes: number;
  /** Resident memory of the agent's process tree. */
  readonly memory_bytes: number;
  /** Size of the sandbox's private `/dev/shm`. */
  readonly shm_bytes: number;
  /** Bytes in the worktree (`.git` excepted), apparent sizes. */
  readonly worktree_bytes: number;
  /** Entries (files, links, directories) in the worktree (`.git` excepted). */
  readonly worktree_files: number;
}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** Generous but finite: a build with many threads, a large checkout with its dependencies. */
export const DEFAULT_LIMITS: MissionLimits = Object.freeze({
  processes: 4096,
  memory_bytes: 8 * GiB,
  shm_bytes: 512 * MiB,
  worktree_bytes: 4 * GiB,
  worktree_files: 200_000,
});

/** The host's values, each lowered (never raised) by the mission's request: host policy wins. */
export function effectiveLimits(host: MissionLimits, requested: Partial<MissionLimits> | undefined): MissionLimits {
  const out: Record<string, number> = { ...host };
  for (const key of Object.keys(host) as Array<keyof MissionLimits>) {
    const asked = requested?.[key];
    if (asked !== undefined && asked < host[key]) out[key] = asked;
  }
  return out as unknown as MissionLimits;
}

/** How one limit holds: set by the kernel (`rlimit`, `tmpfs`, `cgroup`), sampled by uh (`watcher`), or not at all. */
export type LimitMechanism = 'cgroup' | 'rlimit+watcher' | 'watcher' | 'tmpfs' | 'none';

export interface LimitHost {
  /** The agent and checks run under bubblewrap. */
  isolated: boolean;
  /** uh runs as root (the sandbox's uid maps to 0 outside: RLIMIT_NPROC is not enforced). */
  root: boolean;
  /** `prlimit` (util-linux) was found. */
  prlimit: boolean;
  /** bwrap can size a tmpfs (`--size`). */
  tmpfsSize: boolean;
  /** The cgroup backend holding processes and memory, or null (rlimits and the watcher). */
  cgroup: 'cgroup-v2' | 'cgroup-v1' | null;
}

export function limitMechanisms(host: LimitHost): Record<LimitName, LimitMechanism> {
  const rlimit = host.prlimit ? 'rlimit+watcher' : 'watcher';
  return {
    processes: host.cgroup !== null ? 'cgroup' : host.isolated && !host.root ? rlimit : 'watcher',
    memory: host.cgroup !== null ? 'cgroup' : rlimit,
    shm: host.isolated && host.tmpfsSize ? 'tmpfs' : 'none',
    // On a cgroup backend the joining shell sets RLIMIT_FSIZE (mission-cgroup.ts), prlimit or not.
    worktree_bytes: host.cgroup !== null ? 'rlimit+watcher' : rlimit,
    worktree_files: 'watcher',
  };
}

export type LimitsBackendName = 'cgroup-v2' | 'cgroup-v1' | 'rlimit' | 'none';

/** The cgroup backend where one holds, else `rlimit` where prlimit sets any limit, else `none` (the watcher alone). */
export function limitsBackend(host: LimitHost): LimitsBackendName {
  return host.cgroup ?? (host.prlimit ? 'rlimit' : 'none');
}

/**
 * The prefix that starts a child under the rlimits: `prlimit --nproc … --data … --fsize … --`.
 * `nproc` only where the count is the sandbox's own (isolated, not root); under a cgroup neither
 * `nproc` nor `data` (the cgroup holds both), only `fsize`.
 */
export function rlimitPrefix(prlimit: string, limits: MissionLimits, host: LimitHost): string[] {
  const out = [prlimit];
  if (host.cgroup === null && host.isolated && !host.root) out.push(`--nproc=${limits.processes}`);
  if (host.cgroup === null) out.push(`--data=${limits.memory_bytes * 2}`);
  out.push(`--fsize=${limits.worktree_bytes}`, '--');
  return out;
}

/** The outcome's `raw` when a limit is hit: `limit_exceeded:processes`. */
export function limitRaw(name: LimitName): string {
  return `limit_exceeded:${name}`;
}

/** The host setting that raises one limit (named in the outcome's hint). */
export const LIMIT_VARIABLES: Record<LimitName, string> = {
  processes: 'UH_LIMIT_PROCESSES',
  memory: 'UH_LIMIT_MEMORY_BYTES',
  shm: 'UH_LIMIT_SHM_BYTES',
  worktree_bytes: 'UH_LIMIT_WORKTREE_BYTES',
  worktree_files: 'UH_LIMIT_WORKTREE_FILES',
};

export function limitValue(limits: MissionLimits, name: LimitName): number {
  return name === 'memory' ? limits.memory_bytes : name === 'shm' ? limits.shm_bytes : limits[name];
}
