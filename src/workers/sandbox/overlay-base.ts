/**
 * Base checkouts of copy-on-write sandboxes: one read-only checkout per mirror and base commit,
 * made once and shared by every overlay sandbox at that base (their lower layer). Layout:
 *
 *   <cache>/sandboxes/.bases/<key>.current     the name of the base now shared for <key>
 *   <cache>/sandboxes/.bases/<key>.lock/       the cross-process lock of <key> (file-lock.ts)
 *   <cache>/sandboxes/.bases/<key>-<hex>/      one base: tree/ (the checkout), index (uh's index
 *                                              of it), git/ (the bare git dir that checked it
 *                                              out), base.json, leases/<sandbox name>
 *
 * `<key>` is a digest of the mirror's path and the commit. A base is reference-counted by its
 * leases: a sandbox takes one before it mounts the base, drops it when removed (`releaseBase`).
 * Before each share the base is proved: first by its seal (`baseSeal`: a digest of every entry's
 * kind, mode, inode, size, change and modification time and path, listed by `find` in one
 * process, ~0.1 s at 50,000 files against ~0.7 s for the walk below), kept in `<base>/seal` when
 * the base was made or last proved; a seal that differs is not yet a doubt: the strict proof
 * (`baseDoubt`: every tracked file's kind, mode bits, change time, inode and size as the index
 * recorded them, directory modes as checked out, no entry more) decides, and seals it again when
 * it passes. A changed file or mode is
 * a rebuild (a new `<key>-<hex>`, the doubtful one no longer current, removed when its last lease
 * goes), never a silent difference. Nothing of a base is ever bound into a sandbox except through
 * the overlay, which never writes to its lower layer. `uh gc` and the cache cap collect bases no
 * lease holds (`unusedBases`).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
  renameSync,
} from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { makeDir } from '../../shared/fs/make-dir.js';
import { removeTree, treeBytes } from '../../shared/fs/deep-tree.js';
import { withFileLock } from './file-lock.js';
import { objectIdBytes, writeGitDir } from './git-dir.js';
import { git, type GitCallOptions } from './git.js';
import { readIndexEntries, type IndexEntry } from './index-file.js';
import type { Mirror } from './mirror-cache.js';
import { gitDirSpec, sandboxesRoot } from './worktree.js';

const BaseRecordSchema = z.object({
  mirror: z.string(),
  commit: z.string(),
  created_at: z.string(),
  dir_mode: z.number().int(),
});
export type BaseRecord = z.infer<typeof BaseRecordSchema>;

/** One base checkout, as a sandbox uses it. */
export interface OverlayBase {
  /** `<key>-<hex>`: what a sandbox's record names. */
  name: string;
  /** The checkout: the overlay's lower layer. */
  tree: string;
  /** uh's index of `tree` (its stat data true of the checkout, seen through the overlay too). */
  index: string;
  dirMode: number;
  /** Made for this acquire (true) or shared (false). */
  fresh: boolean;
}

const LOCK_WAIT_MS = 120_000;

export function basesRoot(cacheDir: string): string {
  return join(sandboxesRoot(cacheDir), '.bases');
}

/** The key of a mirror and commit. Pure. */
export function baseKey(mirrorPath: string, commit: string): string {
  return createHash('sha256').update(`${mirrorPath}\0${commit}`).digest('hex').slice(0, 24);
}

const currentFile = (cacheDir: string, key: string) => join(basesRoot(cacheDir), `${key}.current`);
const baseDir = (cacheDir: string, name: string) => join(basesRoot(cacheDir), name);

function readCurrent(cacheDir: string, key: string): string | null {
  try {
    const name = readFileSync(currentFile(cacheDir, key), 'utf8').trim();
    return existsSync(join(baseDir(cacheDir, name), 'base.json')) ? name : null;
  } catch {
    return null;
  }
}

function readBaseRecord(dir: string): BaseRecord | null {
  try {
    return BaseRecordSchema.parse(JSON.parse(readFileSync(join(dir, 'base.json'), 'utf8')));
  } catch {
    return null;
  }
}

function baseOf(cacheDir: string, name: string, record: BaseRecord, fresh: boolean): OverlayBase {
  const dir = baseDir(cacheDir, name);
  return { name, tree: join(dir, 'tree'), index: join(dir, 'index'), dirMode: record.dir_mode, fresh };
}

const MODE_EXEC = 0o100755;
const MODE_SYMLINK = 0o120000;
const MODE_GITLINK = 0o160000;
const lo32 = (n: bigint) => Number(n & 0xffffffffn);

/** What is wrong with one checked-out entry, strictly: its kind, its mode bits, its change time, inode and size as the index recorded them. */
function entryDoubt(abs: string, e: IndexEntry, dirMode: number): string | null {
  const st = lstatSync(abs, { bigint: true });
  if (e.mode === MODE_GITLINK) return st.isDirectory() && readdirSync(abs).length === 0 ? null : 'a submodule changed';
  if (e.mode === MODE_SYMLINK ? !st.isSymbolicLink() : !st.isFile()) return 'changed kind';
  const bits = e.mode === MODE_EXEC ? dirMode : dirMode & 0o666;
  if (e.mode !== MODE_SYMLINK && Number(st.mode & 0o7777n) !== bits) return 'its mode changed';
  // Any write, chmod, rename or replacement moves the change time, which nobody can set back.
  const same =
    lo32(st.ctimeNs / 1_000_000_000n) === e.ctimeS &&
    Number(st.ctimeNs % 1_000_000_000n) === e.ctimeNs &&
    lo32(st.ino) === e.ino &&
    lo32(st.size) === e.size;
  return same ? null : 'it changed since the checkout';
}

/**
 * Null when the base is exactly its commit as uh checked it out (every index entry as recorded,
 * every directory at its checkout mode, nothing more); else the first doubt, naming the path.
 * Repairs nothing: a base other overlays may have mounted is never written.
 */
export function baseDoubt(base: Pick<OverlayBase, 'tree' | 'index' | 'dirMode'>, commit: string): string | null {
  try {
    const entries = readIndexEntries(base.index, objectIdBytes(commit));
    if (entries === null) return "the base's index cannot be read";
    const files = new Map(entries.map((e) => [e.path, e]));
    let seen = 0;
    const walk = (rel: string): string | null => {
      const abs = rel === '' ? base.tree : join(base.tree, rel);
      if ((lstatSync(abs).mode & 0o7777) !== base.dirMode) return `${rel || '.'}: a directory's mode changed`;
      for (const name of readdirSync(abs)) {
        const path = rel === '' ? name : `${rel}/${name}`;
        const entry = files.get(path);
        if (entry) {
          seen += 1;
          const doubt = entryDoubt(join(abs, name), entry, base.dirMode);
          if (doubt !== null) return `${path}: ${doubt}`;
        } else if (lstatSync(join(abs, name)).isDirectory()) {
          const doubt = walk(path);
          if (doubt !== null) return doubt;
        } else return `${path}: not in the base commit`;
      }
      return null;
    };
    const doubt = walk('');
    if (doubt !== null) return doubt;
    return seen === files.size ? null : `${files.size - seen} tracked path(s) missing`;
  } catch (error) {
    return `the base cannot be read: ${(error as Error).message}`;
  }
}

/**
 * The base tree's seal: sha256 of `find . -printf` of every entry (kind, mode, inode, size,
 * mtime and ctime to the nanosecond, path), or null when `find` fails. Any write, chmod, rename,
 * replacement, new or removed entry moves a ctime or the listing: the seal differs. Nobody can
 * set a ctime back.
 */
export async function baseSeal(tree: string): Promise<string | null> {
  return new Promise((done) => {
    const hash = createHash('sha256');
    const child = spawn('find', ['.', '-printf', '%y %m %i %s %T@ %C@ %P\\0'], {
      cwd: tree,
      env: { PATH: '/usr/bin:/bin', LC_ALL: 'C' },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    child.stdout.on('data', (chunk: Buffer) => hash.update(chunk));
    child.on('error', () => done(null));
    child.on('close', (code) => done(code === 0 ? hash.digest('hex') : null));
  });
}

const sealFile = (dir: string) => join(dir, 'seal');

function readSeal(dir: string): string | null {
  try {
    return readFileSync(sealFile(dir), 'utf8').trim();
  } catch {
    return null;
  }
}

/** Null when the shared base is as made (its seal, else the strict proof, which then seals it again); else the doubt. */
async function sharedDoubt(dir: string, base: OverlayBase, commit: string): Promise<string | null> {
  const seal = await baseSeal(base.tree);
  if (seal !== null && seal === readSeal(dir)) return null;
  const doubt = baseDoubt(base, commit);
  if (doubt === null && seal !== null) writeFileSync(sealFile(dir), `${seal}\n`);
  return doubt;
}

/** Check `commit` out into a new base dir (one `git read-tree`) and make it current. */
async function buildBase(cacheDir: string, mirror: Mirror, commit: string, call: GitCallOptions): Promise<OverlayBase> {
  const key = baseKey(mirror.path, commit);
  const name = `${key}-${randomBytes(4).toString('hex')}`;
  const dir = baseDir(cacheDir, name);
  const tree = join(dir, 'tree');
  makeDir(join(dir, 'leases'));
  makeDir(tree);
  const gitDir = join(dir, 'git');
  writeGitDir(gitDir, gitDirSpec(mirror, commit, true));
  await git(['read-tree', '--reset', '-u', commit], {
    ...call,
    cwd: tree,
    gitDir,
    workTree: tree,
    env: { GIT_INDEX_FILE: join(dir, 'index') },
  });
  const record: BaseRecord = {
    mirror: mirror.path,
    commit,
    created_at: new Date().toISOString(),
    dir_mode: lstatSync(tree).mode & 0o7777,
  };
  const seal = await baseSeal(tree);
  if (seal !== null) writeFileSync(sealFile(dir), `${seal}\n`);
  writeFileSync(join(dir, 'base.json'), JSON.stringify(record, null, 2));
  writeFileSync(`${currentFile(cacheDir, key)}.tmp`, `${name}\n`);
  renameSync(`${currentFile(cacheDir, key)}.tmp`, currentFile(cacheDir, key));
  return baseOf(cacheDir, name, record, true);
}

/**
 * The base of `mirror` at `commit`, proved and leased to `holder` (a sandbox name): the current
 * one when it passes the proof, else a new checkout. `onRebuild` hears why a base was not shared.
 */
export async function acquireBase(
  cacheDir: string,
  mirror: Mirror,
  commit: string,
  holder: string,
  onRebuild: (name: string, reason: string) => void = () => undefined,
  call: GitCallOptions = {},
): Promise<OverlayBase> {
  makeDir(basesRoot(cacheDir));
  const key = baseKey(mirror.path, commit);
  return withFileLock(
    join(basesRoot(cacheDir), `${key}.lock`),
    async () => {
      let base: OverlayBase | null = null;
      const current = readCurrent(cacheDir, key);
      const record = current && readBaseRecord(baseDir(cacheDir, current));
      if (current && record && record.commit === commit && record.mirror === mirror.path) {
        const shared = baseOf(cacheDir, current, record, false);
        const doubt = await sharedDoubt(baseDir(cacheDir, current), shared, commit);
        if (doubt === null) base = shared;
        else {
          onRebuild(current, doubt);
          rmSync(currentFile(cacheDir, key), { force: true });
          collectIfUnused(cacheDir, current);
        }
      }
      base ??= await buildBase(cacheDir, mirror, commit, call);
      writeFileSync(join(baseDir(cacheDir, base.name), 'leases', holder), '');
      return base;
    },
    LOCK_WAIT_MS,
  );
}

/** The leases of a base dir (sandbox names). */
function leases(cacheDir: string, name: string): string[] {
  try {
    return readdirSync(join(baseDir(cacheDir, name), 'leases'));
  } catch {
    return [];
  }
}

/** Remove a base that no lease holds and that is no longer current (a rebuilt one). */
function collectIfUnused(cacheDir: string, name: string): void {
  const key = name.split('-')[0] as string;
  if (leases(cacheDir, name).length > 0 || readCurrent(cacheDir, key) === name) return;
  removeTree(baseDir(cacheDir, name));
}

/** Drop `holder`'s lease on base `name`; a base no longer current goes with its last lease. */
export async function releaseBase(cacheDir: string, name: string, holder: string): Promise<void> {
  const key = name.split('-')[0] as string;
  await withFileLock(
    join(basesRoot(cacheDir), `${key}.lock`),
    async () => {
      rmSync(join(baseDir(cacheDir, name), 'leases', holder), { force: true });
      collectIfUnused(cacheDir, name);
    },
    LOCK_WAIT_MS,
  );
}

/** A base no lease holds: what `uh gc` and the cache cap may collect. */
export interface UnusedBase {
  name: string;
  path: string;
  bytes: number;
  createdAt: number;
}

/**
 * Every base dir whose leases all name sandboxes that no longer exist (`live`: the names of the
 * sandbox records), oldest first.
 */
export function unusedBases(cacheDir: string, live: ReadonlySet<string>): UnusedBase[] {
  const root = basesRoot(cacheDir);
  if (!existsSync(root)) return [];
  const out: UnusedBase[] = [];
  for (const name of readdirSync(root)) {
    if (!/^[0-9a-f]{24}-[0-9a-f]{8}$/.test(name)) continue;
    const record = readBaseRecord(baseDir(cacheDir, name));
    if (leases(cacheDir, name).some((holder) => live.has(holder))) continue;
    const path = baseDir(cacheDir, name);
    out.push({ name, path, bytes: treeBytes(path), createdAt: record ? Date.parse(record.created_at) : 0 });
  }
  return out.sort((a, b) => a.createdAt - b.createdAt);
}

/**
 * Remove a base nobody leases, under its lock (a sandbox may have leased it since the plan):
 * true when removed. The pointer to it goes too, so the next mission builds it again.
 */
export async function collectBase(cacheDir: string, name: string, live: ReadonlySet<string>): Promise<boolean> {
  const key = name.split('-')[0] as string;
  return withFileLock(
    join(basesRoot(cacheDir), `${key}.lock`),
    async () => {
      if (leases(cacheDir, name).some((holder) => live.has(holder))) return false;
      if (readCurrent(cacheDir, key) === name) rmSync(currentFile(cacheDir, key), { force: true });
      return removeTree(baseDir(cacheDir, name));
    },
    10_000,
  );
}

/** The real path of the bases root (created): the lower layers' parent, for the mount options. */
export function realBasesRoot(cacheDir: string): string {
  makeDir(basesRoot(cacheDir));
  return realpathSync(basesRoot(cacheDir));
}
