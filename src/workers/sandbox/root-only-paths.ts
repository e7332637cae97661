/**
 * What only root may read, for a sandbox uh starts as root (docs/security.md "Root hosts"). The
 * agent is `nobody` with no capabilities in its user namespace, but its kernel uid is still 0:
 * the owner bits of every root-owned file still apply to it, so `/etc/shadow` (0640 root:shadow),
 * the SSH host keys (0600) and `/root` would be readable through the read-only host. These are
 * the paths of that kind, for the plan to hide: root's home, and what a walk of the places such
 * secrets live finds readable by uid/gid 0 but by no other user (no "other" bit): directories
 * (hidden whole, behind a tmpfs) and regular files (a read-only `/dev/null` over each).
 *
 * The walk is bounded: `/etc`, `/var/log`, `/var/backups`, `/var/spool` and `/var/cache/debconf`
 * whole; the first level of `/var/lib`, `/var/cache`, `/boot`, `/srv`, `/opt`, `/home`, `/mnt`
 * and `/media` (root-only directories there, such as `/var/lib/private`); at most
 * `WALK_BUDGET` entries; never into the paths the plan already hides (`skip`), a symlink, or a
 * shared temp dir (sticky and world-writable). A directory with more than `FILES_PER_DIR`
 * root-only files (a journal) is hidden whole instead, so the bwrap command line stays short.
 * Reads the file system; writes only the walk's memo in uh's cache dir (host-walk-memo.ts).
 */
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { memoisedWalk, stamp } from './host-walk-memo.js';

export interface RootOnlyPaths {
  /** Hidden behind an empty tmpfs (root's home first). */
  dirs: string[];
  /** Covered by a read-only /dev/null. */
  files: string[];
}

/** Where the walk looks, and how deep (Infinity: the whole tree). */
export const ROOT_ONLY_WALK: ReadonlyArray<readonly [string, number]> = [
  ['/etc', Infinity],
  ['/var/log', Infinity],
  ['/var/backups', Infinity],
  ['/var/spool', Infinity],
  ['/var/cache/debconf', Infinity],
  ...['/var/lib', '/var/cache', '/boot', '/srv', '/opt', '/home', '/mnt', '/media'].map((p) => [p, 1] as const),
];
export const WALK_BUDGET = 20_000;
export const FILES_PER_DIR = 32;

type Mode = Pick<Stats, 'uid' | 'gid' | 'mode' | 'isDirectory'>;

/** The permission bits that apply to uid 0 and gid 0 without capabilities (owner, else group, else other). */
function agentBits(st: Mode): number {
  if (st.uid === 0) return (st.mode >> 6) & 7;
  if (st.gid === 0) return (st.mode >> 3) & 7;
  return st.mode & 7;
}

/** Readable (files) or enterable (directories) by the agent, and by no other user. */
export function rootOnly(st: Mode): boolean {
  const bit = st.isDirectory() ? 1 : 4;
  return (agentBits(st) & bit) !== 0 && (st.mode & bit) === 0;
}

const isSharedTemp = (st: Stats): boolean => (st.mode & 0o1002) === 0o1002;

const lstat = (p: string): Stats | null => {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
};

/**
 * The root-only paths of this host outside `skip` (and what is under it). `read`, when given,
 * gets each directory the walk reads, stamped just before (host-walk-memo.ts).
 */
export function findRootOnlyPaths(
  skip: readonly string[],
  walk: ReadonlyArray<readonly [string, number]> = ROOT_ONLY_WALK,
  budget = WALK_BUDGET,
  read?: Array<readonly [string, string]>,
): RootOnlyPaths {
  read?.push(['/', stamp('/')]);
  const out: RootOnlyPaths = { dirs: lstat('/root')?.isDirectory() ? ['/root'] : [], files: [] };
  const skipped = (p: string) => skip.some((s) => p === s || p.startsWith(`${s}/`));
  let left = budget;
  const visit = (dir: string, depth: number, isRoot: boolean): void => {
    let names: string[];
    read?.push([dir, stamp(dir)]);
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    const files: string[] = [];
    for (const name of names) {
      if (--left < 0) break;
      const path = join(dir, name);
      const st = skipped(path) ? null : lstat(path);
      if (st === null || st.isSymbolicLink()) continue;
      if (st.isFile() && rootOnly(st)) files.push(path);
      else if (st.isDirectory() && rootOnly(st)) out.dirs.push(path);
      else if (st.isDirectory() && depth > 1 && !isSharedTemp(st) && (agentBits(st) & 5) === 5)
        visit(path, depth - 1, false);
    }
    if (files.length > FILES_PER_DIR && !isRoot) out.dirs.push(dir);
    else out.files.push(...files);
  };
  for (const [root, depth] of walk) {
    const st = skipped(root) ? null : lstat(root);
    if (st?.isDirectory() && rootOnly(st)) out.dirs.push(root);
    else if (st?.isDirectory()) visit(root, depth, true);
  }
  return out;
}

const MEMO_MS = 30_000;
let memo: { key: string; at: number; paths: RootOnlyPaths } | null = null;

/** How long a long-lived process keeps the walk fresh after its last mission: a CI's missions minutes apart. */
const WALK_WARM_MS = 15 * 60_000;

/** Set by `keepRootOnlyWalkWarm`: how long after the last call the walk is kept fresh. */
let warm: { forMs: number; timer: NodeJS.Timeout | undefined } | null = null;

/**
 * For a long-lived process (the resident uh, a worker): while it is idle, the walk is done again
 * as soon as its memo runs out, with the last call's inputs, for up to `forMs` after that call.
 * The next mission then finds the answer fresh instead of walking in its own time (7-8 ms warm,
 * ~24 ms after a while idle on a slow host: docs/benchmarks.md). The timer never keeps the
 * process alive. Off by default: a one-shot `uh mission run` walks only when it asks.
 */
export function keepRootOnlyWalkWarm(forMs: number): void {
  clearTimeout(warm?.timer);
  warm = forMs > 0 ? { forMs, timer: undefined } : null;
}

/** `keepRootOnlyWalkWarm` for the resident uh and the workers: on for WALK_WARM_MS, or off. */
export function keepHostWalksWarm(on: boolean): void {
  keepRootOnlyWalkWarm(on ? WALK_WARM_MS : 0);
}

function armRefresh(
  w: NonNullable<typeof warm>,
  skip: readonly string[],
  memoFile: string | null,
  calledAt: number,
): void {
  clearTimeout(w.timer);
  if (memo === null || Date.now() - calledAt > w.forMs) return;
  w.timer = setTimeout(
    () => {
      if (warm !== w) return;
      remember(skip, memoFile, Date.now());
      armRefresh(w, skip, memoFile, calledAt);
    },
    Math.max(0, memo.at + MEMO_MS - Date.now()) + 5,
  );
  w.timer.unref();
}

const memoKey = (skip: readonly string[]) => skip.join('\0');

/** The walk's answer for `skip` (walked, or from `memoFile`), held as this process's memo. */
function remember(skip: readonly string[], memoFile: string | null, now: number): RootOnlyPaths {
  const { value, at } = walkedOrMemoised(skip, memoFile, now);
  memo = { key: memoKey(skip), at, paths: value };
  return value;
}

const PathsSchema = z.object({ dirs: z.array(z.string()), files: z.array(z.string()) });

/** The walk, or its answer from `memoFile` (host-walk-memo.ts: same skip, no directory changed, < MEMO_MS old). */
function walkedOrMemoised(
  skip: readonly string[],
  memoFile: string | null,
  now: number,
): { value: RootOnlyPaths; at: number } {
  const key = JSON.stringify({ skip, walk: ROOT_ONLY_WALK, budget: WALK_BUDGET, perDir: FILES_PER_DIR });
  const parse = (v: unknown) => PathsSchema.safeParse(v).data ?? null;
  return memoisedWalk(
    memoFile,
    key,
    MEMO_MS,
    parse,
    () => {
      const read: Array<readonly [string, string]> = [];
      return { value: findRootOnlyPaths(skip, ROOT_ONLY_WALK, WALK_BUDGET, read), dirs: read };
    },
    now,
  );
}

/**
 * `findRootOnlyPaths` for a sandbox run as `uid` (none unless 0), walked at most once per
 * `MEMO_MS` for the same `skip` (a worker's phases and missions; across processes through
 * `memoFile` while no directory the walk read has changed), each path checked again here: the
 * plan never names one that is gone (bwrap could not mount over it on the read-only host).
 */
export function rootOnlyPaths(
  uid: number | undefined,
  skip: readonly string[],
  now = Date.now(),
  memoFile: string | null = null,
): RootOnlyPaths {
  if (uid !== 0) return { dirs: [], files: [] };
  const paths =
    memo !== null && memo.key === memoKey(skip) && now - memo.at < MEMO_MS && now >= memo.at
      ? memo.paths
      : remember(skip, memoFile, now);
  if (warm) armRefresh(warm, skip, memoFile, Date.now());
  return {
    dirs: paths.dirs.filter((p) => lstat(p)?.isDirectory()),
    files: paths.files.filter((p) => lstat(p)?.isFile()),
  };
}
