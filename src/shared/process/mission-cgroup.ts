/**
 * One phase's cgroup (the agent's, the checks', the hidden verifier's) on the backend the host
 * gives (cgroup-probe.ts): made with the mission's limits (`pids.max` = processes, enforced by the
 * kernel for root too; `memory.max` / `memory.limit_in_bytes` = memory, no swap beyond it), joined
 * by every child before it execs (`join`: a `/bin/sh` that sets the per-file byte limit, writes
 * itself into each cgroup (`JOIN`), then `exec`s the program, so not one instruction of it runs
 * outside; a join that fails exits 125 and the program never runs), read for the kernel's refusals
 * (`pids.events` max, the OOM kills), and at the end emptied (v2 `cgroup.kill`; v1 SIGKILL of
 * every pid until none is left) and removed. Names are `uh-<pid>-<n>-<phase>.<scope>-<operation>`
 * (`cgroupScope` of the run's cache): a cgroup of that cache whose owning process is gone is swept
 * by `uh gc` and by a worker's retention sweep (`sweepStaleCgroups`, sparing what the worker says
 * to), and a dead owner's cgroups of one operation are ended by the owner watch
 * (`endOrphanedCgroups`, whatever the cache: the operation is the fleet's).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { cgroupMounts, ownCgroups, type CgroupBackend } from './cgroup-probe.js';

export interface CgroupEvents {
  /** Forks the pids controller refused (`pids.events` max). */
  forksRefused: number;
  /** Processes the kernel's OOM killer ended in the cgroup. */
  oomKills: number;
  /** The most memory the cgroup held (bytes), when the kernel says. */
  memoryPeak: number | null;
}

export interface MissionCgroup {
  readonly backend: CgroupBackend;
  /** The cgroup's directories: one on v2, the pids and the memory one on v1. */
  readonly dirs: readonly string[];
  /** Put before a child's argv: joins the cgroup, then execs the rest. */
  readonly join: readonly string[];
  events(): CgroupEvents;
  /** The pids in the cgroup now. */
  pids(): number[];
  /** Kill everything in it, remove it; the events as they were before the kill. Never throws. */
  close(): Promise<CgroupEvents>;
}

/**
 * The joining shell: each argument before `--` is a file to write its own task into, then it execs
 * the rest. On v2 that is `cgroup.procs` and its pid. On v1 it is `tasks` and `0` (the writing
 * thread: the shell's only one, so the whole process): the kernel then moves it without taking the
 * global threadgroup lock for writing, which waits for an RCU grace period (`cgroup.procs` or a
 * pid: 8-30 ms here on each join; `0` to `tasks`: none). Children forked afterwards start inside.
 */
const JOIN = {
  'cgroup-v2': {
    file: 'cgroup.procs',
    script: 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"',
  },
  'cgroup-v1': {
    file: 'tasks',
    script: 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"',
  },
} as const;

let made = 0;

const read = (path: string): string => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

/** `key N` from a flat-keyed cgroup file (`pids.events`, `memory.events`, `memory.oom_control`). */
function keyed(path: string, key: string): number {
  const line = read(path)
    .split('\n')
    .find((l) => l.startsWith(`${key} `));
  return line === undefined ? 0 : Number(line.slice(key.length + 1)) || 0;
}

function number(path: string): number | null {
  const text = read(path).trim();
  return text === '' || !/^\d+$/.test(text) ? null : Number(text);
}

/** Write a limit file; a missing controller's file is skipped, any other failure throws. */
function set(dir: string, file: string, value: string, optional = false): void {
  const path = join(dir, file);
  if (optional && !existsSync(path)) return;
  writeFileSync(path, value);
}

export interface CgroupLimits {
  processes: number;
  memory_bytes: number;
  /**
   * The largest file a process of the phase may write (`RLIMIT_FSIZE`), set by the joining shell
   * (`ulimit -f`, in POSIX's 512-byte blocks, rounded up) so no `prlimit` is exec'd as well; unset: none.
   */
  worktree_bytes?: number;
}

/** The joining shell's script; with `fsize`, it sets `RLIMIT_FSIZE` first (`$1`: the limit in 512-byte blocks). */
function joinScript(kind: CgroupBackend['kind'], fsize: boolean): string {
  return fsize ? `ulimit -f "$1" || exit 125; shift; ${JOIN[kind].script}` : JOIN[kind].script;
}

/** Make the phase's cgroup with the limits set, or throw (the caller fails the run: never unlimited). */
export function createMissionCgroup(
  backend: CgroupBackend,
  name: { phase: string; operationId: string; scope?: string },
  limits: CgroupLimits,
): MissionCgroup {
  const scope = name.scope === undefined ? '' : `.${name.scope}`;
  const leaf = `uh-${process.pid}-${++made}-${name.phase}${scope}-${name.operationId}`;
  const dirs =
    backend.kind === 'cgroup-v2'
      ? [join(backend.parent, leaf)]
      : [join(backend.pids, leaf), join(backend.memory, leaf)];
  for (const dir of dirs) mkdirSync(dir);
  try {
    if (backend.kind === 'cgroup-v2') {
      const [dir] = dirs as [string];
      if (backend.controllers.includes('pids')) set(dir, 'pids.max', String(limits.processes));
      if (backend.controllers.includes('memory')) {
        set(dir, 'memory.max', String(limits.memory_bytes));
        set(dir, 'memory.swap.max', '0', true);
        set(dir, 'memory.oom.group', '1', true); // one OOM kill ends the whole phase, not one process of it
      }
    } else {
      const [pids, memory] = dirs as [string, string];
      set(pids, 'pids.max', String(limits.processes));
      set(memory, 'memory.limit_in_bytes', String(limits.memory_bytes));
      set(memory, 'memory.memsw.limit_in_bytes', String(limits.memory_bytes), true);
    }
  } catch (error) {
    for (const dir of dirs) removeDir(dir);
    throw error;
  }
  return cgroupHandle(backend, dirs, joinArgv(backend, dirs, limits.worktree_bytes));
}

/** The joining shell's argv up to the program's: `/bin/sh -c <script> uh-cgroup-join [blocks] <files…> --`. */
function joinArgv(backend: CgroupBackend, dirs: readonly string[], fileBytes: number | undefined): string[] {
  const { file } = JOIN[backend.kind];
  const blocks = fileBytes === undefined ? [] : [String(Math.ceil(fileBytes / 512))];
  const script = joinScript(backend.kind, fileBytes !== undefined);
  return ['/bin/sh', '-c', script, 'uh-cgroup-join', ...blocks, ...dirs.map((d) => join(d, file)), '--'];
}

function cgroupHandle(backend: CgroupBackend, dirs: string[], joinArgs: readonly string[]): MissionCgroup {
  const v2 = backend.kind === 'cgroup-v2';
  const events = (): CgroupEvents => {
    const [first, memory = first] = dirs as [string, string?];
    return {
      forksRefused: keyed(join(first, 'pids.events'), 'max'),
      oomKills: v2
        ? keyed(join(first, 'memory.events'), 'oom_kill')
        : keyed(join(memory as string, 'memory.oom_control'), 'oom_kill'),
      memoryPeak: number(join(memory as string, v2 ? 'memory.peak' : 'memory.max_usage_in_bytes')),
    };
  };
  const pids = () => pidsIn(dirs);
  return {
    backend,
    dirs,
    join: joinArgs,
    events,
    pids,
    close: async () => {
      const seen = events();
      await emptyCgroup(dirs, v2);
      for (const dir of dirs) await removeWhenFree(dir);
      return seen;
    },
  };
}

function pidsIn(dirs: readonly string[]): number[] {
  const out = new Set<number>();
  for (const dir of dirs)
    for (const line of read(join(dir, 'cgroup.procs')).split('\n')) if (line.trim() !== '') out.add(Number(line));
  return [...out];
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DEADLINE_MS = 5000;

/** Kill everything in the cgroup: v2 `cgroup.kill` (atomic, forks included), else SIGKILL per pid until empty. */
async function emptyCgroup(dirs: readonly string[], v2: boolean): Promise<void> {
  const killFile = join(dirs[0] as string, 'cgroup.kill');
  const atomic = v2 && existsSync(killFile);
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const left = pidsIn(dirs);
    if (left.length === 0 || Date.now() > deadline) return;
    if (atomic) {
      try {
        writeFileSync(killFile, '1');
      } catch {
        // removed meanwhile
      }
    } else
      for (const pid of left)
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // exited meanwhile
        }
    await pause(5);
  }
}

function removeDir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** rmdir, retried while the kernel still counts an exiting task (EBUSY), until the deadline. */
async function removeWhenFree(dir: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!removeDir(dir) && Date.now() < deadline) await pause(5);
}

/** Every directory where uh may make cgroups on this host (its own cgroup in each hierarchy), existing. */
export function cgroupParents(): string[] {
  const mounts = cgroupMounts();
  const own = ownCgroups();
  const out = mounts.v2.map((m) => join(m, own.get('') ?? '/'));
  for (const c of ['pids', 'memory']) {
    const point = mounts.v1.get(c);
    if (point !== undefined) out.push(join(point, own.get(c) ?? '/'));
  }
  return out.map((d) => d.replace(/(.)\/$/, '$1')).filter((d) => existsSync(d));
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * `uh-<pid>-<n>-<phase>[.<scope>]-<operation>`: the owning pid, the scope (`cgroupScope` of the
 * cache the run used; absent in names made before scopes) and the operation, or null for a name
 * not uh's.
 */
function cgroupName(entry: string): { owner: number; scope: string | null; operationId: string } | null {
  const m = /^uh-(\d+)-\d+-[a-z]+(?:\.([0-9a-f]{12}))?-(.+)$/.exec(entry);
  return m ? { owner: Number(m[1]), scope: m[2] ?? null, operationId: m[3] as string } : null;
}

/**
 * The scope of a cache dir in cgroup names: a sweep ends only its own cache's cgroups (and
 * unscoped ones), never another deployment's on the same host, whose own owner watch ends
 * them and says so in the receipt. Pure.
 */
export function cgroupScope(cacheDir: string): string {
  return createHash('sha256').update(cacheDir).digest('hex').slice(0, 12);
}

/** Empty a stale cgroup and remove it; the pids it still held (now killed), or null when it stayed. */
async function endStale(dir: string): Promise<number | null> {
  const held = pidsIn([dir]).length;
  await emptyCgroup([dir], existsSync(join(dir, 'cgroup.kill')));
  await removeWhenFree(dir);
  return existsSync(dir) ? null : held;
}

/**
 * uh's cgroups under `parents` whose owning process is gone (a crashed worker's): emptied and
 * removed; with `scope`, only that cache's (and unscoped ones). `spare` keeps an operation's cgroups for whoever settles it (a worker's sweep spares
 * operations still running: the owner watch that declares the owner dead kills the agent and
 * says so in the receipt).
 */
export async function sweepStaleCgroups(
  parents: readonly string[] = cgroupParents(),
  spare: (operationId: string) => Promise<boolean> = async () => false,
  scope: string | null = null,
): Promise<string[]> {
  const removed: string[] = [];
  for (const parent of parents) {
    let entries: string[];
    try {
      entries = readdirSync(parent);
    } catch {
      continue;
    }
    for (const entry of entries) {
      const name = cgroupName(entry);
      if (!name || alive(name.owner) || (scope !== null && name.scope !== null && name.scope !== scope)) continue;
      if (await spare(name.operationId)) continue;
      const dir = join(parent, entry);
      if ((await endStale(dir)) !== null) removed.push(dir);
    }
  }
  return removed;
}

/**
 * A dead owner's cgroups of `operationId` on this host (their owning process gone): everything in
 * them killed, the cgroups removed. Each one ended, with the processes it still held.
 */
export async function endOrphanedCgroups(
  operationId: string,
  parents: readonly string[] = cgroupParents(),
): Promise<{ dir: string; killed: number }[]> {
  const ended: { dir: string; killed: number }[] = [];
  for (const dir of cgroupsOf(operationId, parents)) {
    const name = cgroupName(dir.slice(dir.lastIndexOf('/') + 1));
    if (!name || name.operationId !== operationId || alive(name.owner)) continue;
    const killed = await endStale(dir);
    if (killed !== null) ended.push({ dir, killed });
  }
  return ended;
}

/** uh's cgroups under `parents` whose name holds `operationId` (what a test asserts is gone). */
export function cgroupsOf(operationId: string, parents: readonly string[] = cgroupParents()): string[] {
  return parents.flatMap((parent) => {
    try {
      return readdirSync(parent)
        .filter((e) => e.startsWith('uh-') && e.endsWith(`-${operationId}`))
        .map((e) => join(parent, e));
    } catch {
      return [];
    }
  });
}
