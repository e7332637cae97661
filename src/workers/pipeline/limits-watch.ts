/**
 * The limits watcher of the runtime phase: what the rlimits cannot count, sampled while the agent
 * runs (shared/process/mission-limits.ts says which limit holds how). Every `PROCESS_TICK_MS` it
 * reads /proc once and follows the process tree of every child the runtime started: its tasks
 * (threads count, as RLIMIT_NPROC counts them), its resident memory, and, isolated, the use of
 * the sandbox's own `/dev/shm` (seen through /proc/<pid>/root). The worktree is walked too, at
 * most once a second and never more than a fifth of the time. The first limit reached is heard by
 * `onHit` once (the runtime phase then stops the run and names the limit); nothing after.
 */
import { readdirSync, readFileSync, statfsSync } from 'node:fs';
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
}

interface ProcEntry {
  ppid: number;
  threads: number;
  rssPages: number;
}

/** Every process's parent, threads and resident pages: one read of /proc/<pid>/stat each. */
function readProcs(): Map<number, ProcEntry> {
  const out = new Map<number, ProcEntry>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name may hold spaces and parentheses: the fields start after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(name), {
        ppid: Number(fields[1]),
        threads: Number(fields[17]),
        rssPages: Number(fields[21]),
      });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

export interface TreeSample {
  tasks: number;
  rssBytes: number;
  /** The descendants (roots excluded): inside the sandbox when isolated. */
  inner: number[];
}

/** The trees under `roots`: their tasks, resident bytes and descendant pids. */
export function sampleTrees(roots: readonly number[]): TreeSample {
  const procs = readProcs();
  const children = new Map<number, number[]>();
  for (const [pid, entry] of procs) {
    const list = children.get(entry.ppid);
    if (list) list.push(pid);
    else children.set(entry.ppid, [pid]);
  }
  const sample: TreeSample = { tasks: 0, rssBytes: 0, inner: [] };
  const seen = new Set<number>();
  const queue = roots.filter((pid) => procs.has(pid));
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const entry = procs.get(pid) as ProcEntry;
    sample.tasks += entry.threads;
    sample.rssBytes += entry.rssPages * PAGE_BYTES;
    if (!roots.includes(pid)) sample.inner.push(pid);
    queue.push(...(children.get(pid) ?? []));
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
}

/** The first limit one sample reaches, or null. */
function check(options: WatchOptions, roots: readonly number[], walkTree: boolean): LimitHit | null {
  const { limits } = options;
  const sample = sampleTrees(roots);
  if (sample.tasks >= limits.processes) return { limit: 'processes', observed: sample.tasks };
  if (sample.rssBytes >= limits.memory_bytes) return { limit: 'memory', observed: sample.rssBytes };
  const shm = options.isolated ? shmUsed(sample.inner) : null;
  if (shm !== null && shm >= limits.shm_bytes) return { limit: 'shm', observed: shm };
  if (!walkTree) return null;
  const usage = worktreeUsage(options.worktree, { bytes: limits.worktree_bytes, files: limits.worktree_files });
  if (usage.over === null) return null;
  return { limit: usage.over, observed: usage.over === 'worktree_files' ? usage.files : usage.bytes };
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
