/**
 * The warm pool: clean sandboxes kept per mirror, so the next mission on a repository resets one
 * (cost in proportion to what changed) instead of checking out the whole tree. Shared by every
 * process using the cache dir (workers, `uh mission run`).
 *
 * States of a sandbox record (`.meta/<name>.json`): `active` (a mission owns it) → on a good end,
 * `release` cleans and proves it clean, then parks it as `pooled` (renamed `pool-<hex>`, a marker
 * `.pool/<mirror key>/<name>`, keep_until = now + idle lifetime) → `acquire` claims it as
 * `active` again (renamed `<operation>-<hex>`), or the sweep drops it (idle past keep_until, the
 * cache cap, low disk). Every transition of a pooled record (park, claim, drop) happens under one
 * cross-process lock (`.pool.lock`, file-lock.ts) and leaves a record beside every directory at
 * every step (the orphan sweep never sees a pooled or claimed dir without one).
 *
 * Release (after the receipt; never for a retained sandbox): uh's index and private git dir must
 * be exactly as uh wrote them (`git-dir.ts`), else the sandbox is discarded; the diff's loose
 * objects and the agent's whole `.git` are deleted; everything not tracked is removed
 * (`worktree-scrub.ts`); a walk checks every tracked file (stat data, or content) and, only when
 * one changed, `git read-tree --reset -u <commit>` restores them and the walk runs again as the
 * proof (no other entry; modes set back); the agent's `.git` is written afresh. Acquire: re-checks the stat stamps
 * taken when parked (anything touched since → discarded), then, when the mission's commit
 * differs, `git read-tree -m -u <old> <new>` (proportional to the change). Git processes on the
 * warm path: at release one when the mission changed a tracked file (else none), at acquire one
 * when the base commit moved (else none). Any doubt or error discards the sandbox
 * (removed through the path guard) and the mission gets a cold checkout.
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { errorMessage } from '../../shared/errors.js';
import { withFileLock } from './file-lock.js';
import { removeOverlaySandbox } from './overlay-sandbox.js';
import {
  agentGitDirDoubt,
  dropLooseObjects,
  objectFormatOf,
  objectIdBytes,
  privateGitDirDoubt,
  PRIVATE_GIT_DIR_PARTS,
  setHead,
} from './git-dir.js';
import { git, type GitCallOptions } from './git.js';
import { readIndexEntries } from './index-file.js';
import type { Mirror } from './mirror-cache.js';
import { scrubWorktree, worktreeDoubt } from './worktree-scrub.js';
import {
  FAR_FUTURE,
  fileStamp,
  gitDirSpec,
  metaPath,
  readRecords,
  removeSandbox,
  sandboxesRoot,
  sandboxName,
  sandboxPaths,
  SandboxRecordSchema,
  writeAgentGitDir,
  writeRecord,
  type Sandbox,
  type SandboxPaths,
  type SandboxRecord,
} from './worktree.js';
import { byCodeUnit } from '../../shared/compare.js';
import { makeDir } from '../../shared/fs/make-dir.js';

/** `UH_SANDBOX_POOL_SIZE` and `UH_SANDBOX_POOL_IDLE_MINUTES`. */
export interface PoolSettings {
  /** Most pooled sandboxes per mirror; 0 turns the pool off. */
  size: number;
  /** How long a pooled sandbox may wait for a mission before the sweep removes it. */
  idleMs: number;
}

/** Why a pooled or released sandbox was not (re)used: for the log. */
export type DiscardReport = (path: string, reason: string) => void;

const LOCK_WAIT_MS = 30_000;
const lockDir = (cacheDir: string) => join(sandboxesRoot(cacheDir), '.pool.lock');
const markerDir = (cacheDir: string, mirrorPath: string) =>
  join(sandboxesRoot(cacheDir), '.pool', createHash('sha256').update(mirrorPath).digest('hex').slice(0, 16));

function markers(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function recordOf(cacheDir: string, name: string): SandboxRecord | null {
  try {
    return SandboxRecordSchema.parse(JSON.parse(readFileSync(metaPath(cacheDir, name), 'utf8')));
  } catch {
    return null;
  }
}

/**
 * What a sandbox at rest must not see change: its top dirs, the agent's git files, uh's index and
 * every file and dir of uh's private git dir that `privateGitDirDoubt` reads. Release proved them
 * as uh wrote them just before these were taken, so equal stamps at acquire (inode, size, mtime,
 * ctime: a write changes the ctime, which no one can set back) prove them still so without
 * reading them again.
 */
function restStamps(paths: SandboxPaths): Record<string, string> {
  const g = paths.agentGitDir;
  const parts = {
    root: paths.path,
    git: g,
    config: join(g, 'config'),
    head: join(g, 'HEAD'),
    index: join(g, 'index'),
    alternates: join(g, 'objects', 'info', 'alternates'),
    uh_dir: paths.privateDir,
    uh_git: paths.gitDir,
    uh_index: paths.index,
    ...Object.fromEntries(PRIVATE_GIT_DIR_PARTS.map((part) => [`uh_git/${part}`, join(paths.gitDir, part)])),
  };
  return Object.fromEntries(Object.entries(parts).map(([k, p]) => [k, fileStamp(p)]));
}

const sameStamps = (a: Record<string, string> | undefined, b: Record<string, string>) =>
  a !== undefined && Object.keys(b).length === Object.keys(a).length && Object.entries(b).every(([k, v]) => a[k] === v);

/** Move a sandbox's two dirs to a new name; the record for the new name must already exist. */
function renameSandbox(from: SandboxPaths, to: SandboxPaths): void {
  renameSync(from.path, to.path);
  renameSync(from.privateDir, to.privateDir);
}

interface Claimed {
  record: SandboxRecord;
  paths: SandboxPaths;
}

/** Under the lock: the best pooled sandbox for `mirror` (same commit first, then the newest), renamed for `operationId`. */
function claim(
  cacheDir: string,
  mirror: Mirror,
  commit: string,
  operationId: string,
  now: Date,
  onDiscard: DiscardReport,
): Claimed | null {
  const dir = markerDir(cacheDir, mirror.path);
  const candidates: SandboxRecord[] = [];
  for (const name of markers(dir)) {
    const record = recordOf(cacheDir, name);
    if (
      record &&
      record.state === 'pooled' &&
      record.mirror === mirror.path &&
      Date.parse(record.keep_until) > now.getTime()
    )
      candidates.push(record);
    else if (!record || record.state !== 'pooled') rmSync(join(dir, name), { force: true }); // a stale marker
  }
  candidates.sort(
    (a, b) => Number(b.commit === commit) - Number(a.commit === commit) || byCodeUnit(b.created_at, a.created_at),
  );
  for (const pooled of candidates) {
    rmSync(join(dir, pooled.name), { force: true });
    const from = sandboxPaths(pooled.path);
    if (!sameStamps(pooled.stamps, restStamps(from))) {
      onDiscard(pooled.path, 'changed while pooled');
      void removeSandbox(cacheDir, pooled).catch(() => undefined);
      continue;
    }
    const name = sandboxName(operationId);
    const paths = sandboxPaths(join(dirname(pooled.path), name));
    const record: SandboxRecord = {
      ...pooled,
      name,
      path: paths.path,
      operation_id: operationId,
      created_at: now.toISOString(),
      keep_until: FAR_FUTURE,
      state: 'active',
    };
    delete record.stamps;
    writeRecord(cacheDir, record);
    renameSandbox(from, paths);
    rmSync(metaPath(cacheDir, pooled.name), { force: true });
    return { record, paths };
  }
  return null;
}

/**
 * A pooled sandbox for this mission, reset to `commit`; null when the pool has none (or the one
 * it had was doubtful: then it is removed and reported).
 */
export async function acquirePooled(
  cacheDir: string,
  mirror: Mirror,
  commit: string,
  operationId: string,
  now: Date,
  settings: PoolSettings,
  onDiscard: DiscardReport,
  call: GitCallOptions = {},
): Promise<Sandbox | null> {
  if (settings.size <= 0 || markers(markerDir(cacheDir, mirror.path)).length === 0) return null;
  const claimed = await withFileLock(
    lockDir(cacheDir),
    async () => claim(cacheDir, mirror, commit, operationId, now, onDiscard),
    LOCK_WAIT_MS,
  ).catch((error) => {
    onDiscard(markerDir(cacheDir, mirror.path), `pool unavailable: ${errorMessage(error)}`);
    return null;
  });
  if (!claimed) return null;
  const { record, paths } = claimed;
  try {
    if (record.commit !== commit) {
      await git(['read-tree', '-m', '-u', record.commit, commit], {
        ...call,
        cwd: paths.path,
        gitDir: paths.gitDir,
        workTree: paths.path,
        env: { GIT_INDEX_FILE: paths.index },
      });
      setHead(paths.gitDir, commit);
      setHead(paths.agentGitDir, commit);
      writeFileSync(join(paths.agentGitDir, 'index'), readFileSync(paths.index));
      writeRecord(cacheDir, { ...record, commit });
    }
    const dirMode = record.dir_mode ?? lstatSync(paths.path).mode & 0o7777;
    return {
      name: record.name,
      path: paths.path,
      mirror,
      commit,
      warm: true,
      dirMode,
      indexStamp: fileStamp(paths.index),
    };
  } catch (error) {
    onDiscard(paths.path, errorMessage(error));
    await removeSandbox(cacheDir, record).catch(() => undefined);
    return null;
  }
}

/**
 * Put a used sandbox back at its commit and prove it (see the module comment). Null when it is
 * clean; else the doubt (the caller removes the sandbox).
 */
async function cleanForPool(sandbox: Sandbox, call: GitCallOptions, hints: ReleaseHints): Promise<string | null> {
  const paths = sandboxPaths(sandbox.path);
  const spec = gitDirSpec(sandbox.mirror, sandbox.commit, true);
  if (fileStamp(paths.index) !== sandbox.indexStamp) return "uh's index was written by someone else";
  const privateEntries = readdirSync(paths.privateDir).sort().join(',');
  if (privateEntries !== 'git,index') return `unexpected entries in ${paths.privateDir}`;
  const privateDoubt = privateGitDirDoubt(paths.gitDir, spec);
  if (privateDoubt !== null) return `uh's git dir: ${privateDoubt}`;
  const root = lstatSync(paths.path);
  if (!root.isDirectory()) return 'the worktree is no longer a directory';
  if ((root.mode & 0o7777) !== sandbox.dirMode) chmodSync(paths.path, sandbox.dirMode);
  dropLooseObjects(paths.gitDir);
  // The agent's .git is kept when it is exactly as uh wrote it (an agent that never ran git):
  // nothing to remove and write again. Any change to it, and it is made anew.
  const agentDirKept =
    agentGitDirDoubt(paths.agentGitDir, gitDirSpec(sandbox.mirror, sandbox.commit, false), paths.index) === null;
  if (!agentDirKept) rmSync(paths.agentGitDir, { recursive: true, force: true });
  const before = readIndexEntries(paths.index, objectIdBytes(sandbox.commit));
  if (before === null) return "uh's index cannot be read";
  scrubWorktree(paths.path, before);
  // No tracked file changed (a no-op mission, or one that only added files): no git process at all.
  // One the diff saw changed is reset without first walking the tree to find a doubt; the proof
  // after the reset is the same either way.
  let reset = false;
  if (
    hints.trackedChanged === true ||
    worktreeDoubt(paths.path, paths.index, before, sandbox.dirMode, objectFormatOf(sandbox.commit)) !== null
  ) {
    await git(['read-tree', '--reset', '-u', sandbox.commit], {
      ...call,
      cwd: paths.path,
      gitDir: paths.gitDir,
      workTree: paths.path,
      env: { GIT_INDEX_FILE: paths.index },
    });
    reset = true;
    const after = readIndexEntries(paths.index, objectIdBytes(sandbox.commit));
    if (after === null) return "uh's index cannot be read after the reset";
    const doubt = worktreeDoubt(paths.path, paths.index, after, sandbox.dirMode, objectFormatOf(sandbox.commit));
    if (doubt !== null) return `not clean after the reset: ${doubt}`;
  }
  if (!agentDirKept) writeAgentGitDir(paths, sandbox.mirror, sandbox.commit);
  else if (reset) copyFileSync(paths.index, join(paths.agentGitDir, 'index')); // the agent's copy follows uh's new index
  return null;
}

/** Under the lock: rename the clean sandbox `pool-<hex>`, record it `pooled` with its stamps, add its marker. */
function park(
  cacheDir: string,
  sandbox: Sandbox,
  operationId: string,
  settings: PoolSettings,
  now: Date,
): string | null {
  const dir = markerDir(cacheDir, sandbox.mirror.path);
  if (markers(dir).length >= settings.size) return 'the pool is full';
  const name = sandboxName('pool');
  const from = sandboxPaths(sandbox.path);
  const to = sandboxPaths(join(dirname(sandbox.path), name));
  const record: SandboxRecord = {
    name,
    path: to.path,
    mirror: sandbox.mirror.path,
    operation_id: operationId,
    commit: sandbox.commit,
    created_at: now.toISOString(),
    keep_until: new Date(now.getTime() + settings.idleMs).toISOString(),
    state: 'pooled',
    dir_mode: sandbox.dirMode,
  };
  writeRecord(cacheDir, record);
  try {
    renameSandbox(from, to);
  } catch (error) {
    rmSync(metaPath(cacheDir, name), { force: true });
    throw error;
  }
  writeRecord(cacheDir, { ...record, stamps: restStamps(to) });
  makeDir(dir);
  writeFileSync(join(dir, name), '');
  rmSync(metaPath(cacheDir, sandbox.name), { force: true });
  return null;
}

/** What the run already knows of the worktree: `trackedChanged`, a tracked file changed (the diff listed it). */
export interface ReleaseHints {
  trackedChanged?: boolean;
}

/**
 * After a mission that keeps nothing: clean the sandbox and park it in the pool. Returns null when
 * pooled; else why not (pool off or full, a doubt, an error), and the caller removes the sandbox.
 */
export async function releaseToPool(
  cacheDir: string,
  sandbox: Sandbox,
  operationId: string,
  settings: PoolSettings,
  now: Date,
  call: GitCallOptions = {},
  hints: ReleaseHints = {},
): Promise<string | null> {
  if (settings.size <= 0) return 'the pool is off';
  if (markers(markerDir(cacheDir, sandbox.mirror.path)).length >= settings.size) return 'the pool is full';
  try {
    const doubt = await cleanForPool(sandbox, call, hints);
    if (doubt !== null) return doubt;
    return await withFileLock(
      lockDir(cacheDir),
      async () => park(cacheDir, sandbox, operationId, settings, now),
      LOCK_WAIT_MS,
    );
  } catch (error) {
    return errorMessage(error);
  }
}

/** Under the lock: remove a pooled sandbox unless a mission claimed it meanwhile. */
function dropUnderLock(cacheDir: string, name: string): boolean {
  const record = recordOf(cacheDir, name);
  if (!record || record.state !== 'pooled') return false;
  rmSync(join(markerDir(cacheDir, record.mirror), name), { force: true });
  void removeSandbox(cacheDir, record).catch(() => undefined);
  return true;
}

/**
 * Remove a sandbox by its record, whatever its state: a pooled one only through the pool's lock,
 * and only if it is still pooled (a mission may have claimed it since the record was read).
 */
export async function discardSandbox(cacheDir: string, record: SandboxRecord): Promise<boolean> {
  if (record.backend === 'overlay') {
    await removeOverlaySandbox(cacheDir, record); // never pooled: its upper layer and its lease on the base
    return true;
  }
  if (record.state !== 'pooled') {
    await removeSandbox(cacheDir, record);
    return true;
  }
  return withFileLock(lockDir(cacheDir), async () => dropUnderLock(cacheDir, record.name), LOCK_WAIT_MS);
}

/** Drop every pooled sandbox (low disk): returns how many. */
export async function drainPool(cacheDir: string): Promise<number> {
  if (!existsSync(sandboxesRoot(cacheDir))) return 0;
  const pooled = readRecords(cacheDir).filter((r) => r.state === 'pooled');
  if (pooled.length === 0) return 0;
  return withFileLock(
    lockDir(cacheDir),
    async () => pooled.filter((r) => dropUnderLock(cacheDir, r.name)).length,
    LOCK_WAIT_MS,
  );
}
