/**
 * The limits watcher of the runtime phase: what the rlimits cannot count, sampled while the agent
 * runs (shared/process/mission-limits.ts says which limit holds how). Every `PROCESS_TICK_MS` it
 * follows the process tree of every child the runtime started through /proc (the kernel's
 * per-thread `children` lists, else one scan of every process's parent): its tasks
 * (threads count, as RLIMIT_NPROC counts them), its resident memory, and, isolated, the use of
 * the sandbox's own `/dev/shm` (seen through /proc/<pid>/root). The worktree is walked too, at
 * most once a second and never more than a fifth of the time. The first limit reached is heard by
 * `onHit` once (the runtime phase then stops the run and names the limit); nothing after. On a
 * cgroup backend the kernel holds processes and memory: the watcher reads the cgroup's refusals
 * instead of sampling those two.
 */
import { existsSync, readdirSync, readFileSync, statfsSync } from 'node:fs';
import { limitValue, type LimitName, type MissionLimits } from '../../shared/process/mission-limits.js';
import type { SpawnGroup, SpawnedGroup } from '../../shared/process/spawn-group.js';
import { worktreeUsage } from '../sandbox/worktree-usage.js';

export const PROCESS_TICK_MS = 200;
const WORKTREE_MIN_MS = 1000;
/** /proc's `rss` is in pages; 4 KiB on every Linux uh runs on (x86-64, arm64 with 4K pages). */
const PAGE_BYTES = 4096;

export interface LimitHit {
  limit: LimitName;
  observed: number;
  /** What saw it: the kernel's cgroup, the watcher's sample, the walk after the agent. */
  by?: 'cgroup' | 'watcher' | 'walk';
}

interface ProcEntry {
  ppid: number;
  threads: number;
  rssPages: number;
}

/** One process's parent, threads and resident pages from /proc/<pid>/stat, or null once it exited. */
function readStat(pid: number): ProcEntry | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), threads: Number(fields[17]), rssPages: Number(fields[21]) };
  } catch {
    return null;
  }
}

/** Where the kernel lists each thread's children (CONFIG_PROC_CHILDREN): the tree costs its own size, not the host's. */
const CHILDREN_FILES = existsSync(`/proc/self/task/${process.pid}/children`);

/** The children of `pid`, from each of its threads' `children` file. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const list = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (list !== '') out.push(...list.split(' ').map(Number));
    }
  } catch {
    // exited meanwhile
  }
  return out;
}

/** Without `children` files: every process's parent, from one read of each /proc/<pid>/stat. */
function childrenByScan(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const entry = readStat(Number(name));
    if (entry === null) continue;
    const list = children.get(entry.ppid);
    if (list) list.push(Number(name));
    else children.set(entry.ppid, [Number(name)]);
  }
  return children;
}

export interface TreeSample {
  tasks: number;
  rssBytes: number;
  /** The descendants (roots excluded): inside the sandbox when isolated. */
  inner: number[];
}

/** The trees under `roots`: their tasks, resident bytes and descendant pids. */
export function sampleTrees(roots: readonly number[]): TreeSample {
  const scanned = CHILDREN_FILES ? null : childrenByScan();
  const sample: TreeSample = { tasks: 0, rssBytes: 0, inner: [] };
  const seen = new Set<number>();
  const queue = [...roots];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const entry = readStat(pid);
    if (entry === null) continue;
    sample.tasks += entry.threads;
    sample.rssBytes += entry.rssPages * PAGE_BYTES;
    if (!roots.includes(pid)) sample.inner.push(pid);
    queue.push(...(scanned ? (scanned.get(pid) ?? []) : childrenOf(pid)));
  }
  return sample;
}

/** Bytes in use on the sandbox's `/dev/shm`, seen through the first process inside that still answers. */
function shmUsed(inner: readonly number[]): number | null {
  for (const pid of inner) {
    try {
      const fs = statfsSync(`/proc/${pid}/root/dev/shm`);
      return (fs.blocks - fs.bfree) * fs.bsize;
    } catch {
      // exited, or not ours to read
    }
  }
  return null;
}

export interface LimitsWatch {
  /** Follow this child's tree from now on. */
  add(pid: number | undefined): void;
  /** The first limit reached, if any. */
  hit(): LimitHit | null;
  stop(): void;
}

export interface WatchOptions {
  limits: MissionLimits;
  worktree: string;
  /** Isolated: `/dev/shm` is the sandbox's own and watched; unisolated it is the host's. */
  isolated: boolean;
  onHit: (hit: LimitHit) => void;
  /**
   * On a cgroup backend: the kernel's refusals so far (limits-phase.ts cgroupHit). The kernel
   * then holds processes and memory, and the watcher samples neither.
   */
  kernel?: () => LimitHit | null;
}

/** The first limit one sample reaches, or null. */
function check(options: WatchOptions, roots: readonly number[], walkTree: boolean): LimitHit | null {
  const { limits } = options;
  const kernel = options.kernel?.() ?? null;
  if (kernel !== null) return kernel;
  const sample = sampleTrees(roots);
  if (!options.kernel) {
    if (sample.tasks >= limits.processes) return { limit: 'processes', observed: sample.tasks, by: 'watcher' };
    if (sample.rssBytes >= limits.memory_bytes) return { limit: 'memory', observed: sample.rssBytes, by: 'watcher' };
  }
  const shm = options.isolated ? shmUsed(sample.inner) : null;
  if (shm !== null && shm >= limits.shm_bytes) return { limit: 'shm', observed: shm, by: 'watcher' };
  if (!walkTree) return null;
  const usage = worktreeUsage(options.worktree, { bytes: limits.worktree_bytes, files: limits.worktree_files });
  if (usage.over === null) return null;
  return { limit: usage.over, observed: usage.over === 'worktree_files' ? usage.files : usage.bytes, by: 'watcher' };
}

export function watchLimits(options: WatchOptions): LimitsWatch {
  const roots: number[] = [];
  let found: LimitHit | null = null;
  let nextWalk = Date.now() + WORKTREE_MIN_MS;
  const timer = setInterval(() => {
    if (found !== null || roots.length === 0) return;
    const started = Date.now();
    const walk = started >= nextWalk;
    found = check(options, roots, walk);
    // A walk that took long waits four times as long before the next: at most a fifth of the time.
    if (walk) nextWalk = Date.now() + Math.max(WORKTREE_MIN_MS, 4 * (Date.now() - started));
    if (found !== null) {
      clearInterval(timer);
      options.onHit(found);
    }
  }, PROCESS_TICK_MS);
  timer.unref();
  return {
    add: (pid) => {
      if (pid !== undefined) roots.push(pid);
    },
    hit: () => found,
    stop: () => clearInterval(timer),
  };
}

/** A spawn whose children's process trees the watcher follows; `spawned` lists them (to stop them on a hit). */
export function watchedSpawn(spawn: SpawnGroup, watch: LimitsWatch, spawned: SpawnedGroup[] = []): SpawnGroup {
  return (options) => {
    const child = spawn(options);
    watch.add(child.pid);
    spawned.push(child);
    return child;
  };
}

/** The message of a hit, naming the limit and its value. */
export function hitMessage(hit: LimitHit, limits: MissionLimits): string {
  return `the mission exceeded its ${hit.limit} limit (${limitValue(limits, hit.limit)}; observed ${hit.observed})`;
}
