/**
 * Sandboxes: a checkout of the base commit under `<cache>/sandboxes/`, never inside the user's
 * checkout, sharing nothing writable with the mirror. Layout (`sandboxPaths`):
 *
 *   <cache>/sandboxes/<name>/            the worktree (agent: read-write)
 *   <cache>/sandboxes/<name>/.git/       the agent's own git dir (init'd by uh, then the agent's):
 *                                        objects/info/alternates -> <mirror>/objects, HEAD = base
 *   <cache>/sandboxes/.uh/<name>/git/    uh's private bare git dir (alternates -> <mirror>/objects);
 *                                        uh's diff objects are written here
 *   <cache>/sandboxes/.uh/<name>/index   uh's index at the base commit (uh's checkout wrote it)
 *   <cache>/sandboxes/.meta/<name>.json  the record driving retention
 *   <cache>/sandboxes/.pool/…            the warm pool's index (`sandbox-pool.ts`)
 *
 * Both git dirs are written by hand (`git-dir.ts`): the checkout is uh's one git process.
 * The agent needs `<mirror>/objects` readable (read-only) and nothing else of the cache.
 * Removal deletes the two dirs behind a path guard; the mirror keeps no trace of a sandbox.
 * A sandbox that ended well may instead go back, clean, to the warm pool (`sandbox-pool.ts`).
 */
import {
  copyFileSync,
  existsSync,
  lstatSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
  renameSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join, relative, sep } from 'node:path';
import { z } from 'zod';
import { UhError } from '../../shared/errors.js';
import { removeTree } from '../../shared/fs/deep-tree.js';
import { git, type GitCallOptions } from './git.js';
import { writeGitDir, type GitDirSpec } from './git-dir.js';
import type { Mirror } from './mirror-cache.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export const SandboxRecordSchema = z.object({
  name: z.string(),
  path: z.string(),
  mirror: z.string(),
  operation_id: z.string(),
  commit: z.string(),
  created_at: z.string(),
  /** ISO time after which a sweep removes it; far future while running. */
  keep_until: z.string(),
  /** `pooled`: clean at `commit`, waiting in the warm pool (`sandbox-pool.ts`) until keep_until. */
  state: z.enum(['active', 'retained', 'pooled']),
  /** Permission bits of a directory as uh's checkout made them (files: the same, minus x unless executable). */
  dir_mode: z.number().int().optional(),
  /** Pooled: stat stamps of the parts a sandbox at rest must not see change (checked before reuse). */
  stamps: z.record(z.string(), z.string()).optional(),
  /** How it was made: absent or `worktree` (a checkout), `overlay` (copy-on-write over `base`, overlay-sandbox.ts). */
  backend: z.enum(['worktree', 'overlay']).optional(),
  /** Overlay: the base checkout it leases (`overlay-base.ts`). */
  base: z.string().optional(),
});
export type SandboxRecord = z.infer<typeof SandboxRecordSchema>;

export interface Sandbox {
  name: string;
  path: string;
  mirror: Mirror;
  commit: string;
  /** Taken from the warm pool (true) or checked out from scratch (false). */
  warm: boolean;
  /** Permission bits of the worktree's directories as checked out. */
  dirMode: number;
  /** `fileStamp` of uh's index when uh last wrote it: any other change means someone else did. */
  indexStamp: string;
  /** Which backend made it (the receipt's `sandbox.backend`); unset: `git-worktree`. */
  backend?: 'git-worktree' | 'overlay';
}

export function sandboxesRoot(cacheDir: string): string {
  return join(cacheDir, 'sandboxes');
}

export function metaPath(cacheDir: string, name: string): string {
  return join(sandboxesRoot(cacheDir), '.meta', `${name}.json`);
}

export function writeRecord(cacheDir: string, record: SandboxRecord): void {
  const path = metaPath(cacheDir, record.name);
  makeDir(dirname(path));
  writeFileSync(`${path}.tmp`, JSON.stringify(record, null, 2));
  renameSync(`${path}.tmp`, path);
}

export function readRecords(cacheDir: string): SandboxRecord[] {
  const dir = join(sandboxesRoot(cacheDir), '.meta');
  if (!existsSync(dir)) return [];
  const out: SandboxRecord[] = [];
  for (const file of readdirSync(dir)) {
    if (!file.endsWith('.json')) continue;
    try {
      out.push(SandboxRecordSchema.parse(JSON.parse(readFileSync(join(dir, file), 'utf8'))));
    } catch {
      // A torn record: the sweep treats its sandbox as an orphan.
    }
  }
  return out;
}

/** Twelve hours' worth of a running mission is not enough: active sandboxes are kept ~forever until settled. */
export const FAR_FUTURE = '9999-01-01T00:00:00.000Z';

/** The agent-visible and the uh-private paths of one sandbox (see the module comment). */
export interface SandboxPaths {
  /** The worktree, the agent's only writable place: `<cache>/sandboxes/<name>`. */
  path: string;
  /** The agent's own git dir: `<path>/.git` (objects of the base commit by alternates). */
  agentGitDir: string;
  /** uh's private dir, never bound into the sandbox: `<cache>/sandboxes/.uh/<name>`. */
  privateDir: string;
  /** uh's private git dir over the worktree (`--git-dir`, objects by alternates): `<privateDir>/git`. */
  gitDir: string;
  /** uh's index at the base commit, written by uh's checkout: `<privateDir>/index`. */
  index: string;
}

/** The layout from a sandbox's worktree path (a direct child of the sandboxes root). Pure. */
export function sandboxPaths(path: string): SandboxPaths {
  const privateDir = join(dirname(path), '.uh', basename(path));
  return {
    path,
    agentGitDir: join(path, '.git'),
    privateDir,
    gitDir: join(privateDir, 'git'),
    index: join(privateDir, 'index'),
  };
}

/** Identity and change times of a file or dir (inode, size, mtime, ctime in ns), or `missing`. */
export function fileStamp(path: string): string {
  try {
    const st = lstatSync(path, { bigint: true });
    return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return 'missing';
  }
}

/** The spec of a sandbox's git dirs: objects from the mirror's, HEAD at `commit`. */
export function gitDirSpec(mirror: Pick<Mirror, 'path'>, commit: string, bare: boolean): GitDirSpec {
  return { bare, alternates: join(realpathSync(mirror.path), 'objects'), commit };
}

/** The agent's `.git`, fresh: HEAD detached at `commit`, a copy of uh's index (its stat data true of the checkout). */
export function writeAgentGitDir(paths: SandboxPaths, mirror: Pick<Mirror, 'path'>, commit: string): void {
  writeGitDir(paths.agentGitDir, gitDirSpec(mirror, commit, false));
  copyFileSync(paths.index, join(paths.agentGitDir, 'index'));
}

/** The record of a sandbox just made for `operationId`: active, kept until it is removed. Pure. */
export function activeRecord(
  made: { name: string; path: string; mirror: Pick<Mirror, 'path'>; commit: string; dirMode: number },
  operationId: string,
  now: Date,
): SandboxRecord {
  return {
    name: made.name,
    path: made.path,
    mirror: made.mirror.path,
    operation_id: operationId,
    commit: made.commit,
    created_at: now.toISOString(),
    keep_until: FAR_FUTURE,
    state: 'active',
    dir_mode: made.dirMode,
  };
}

/** A new, unique sandbox name for an operation (or `pool` for a pooled one). */
export function sandboxName(owner: string): string {
  return `${owner}-${randomBytes(4).toString('hex')}`;
}

/** A new sandbox's name and layout under the cache's sandboxes root (made if missing); nothing else is made. */
export function newSandboxSlot(cacheDir: string, operationId: string): { name: string; paths: SandboxPaths } {
  const root = sandboxesRoot(cacheDir);
  makeDir(root);
  const name = sandboxName(operationId);
  return { name, paths: sandboxPaths(join(realpathSync(root), name)) };
}

/**
 * Check out `commit` into a new sandbox. uh's private git dir does the checkout (its index is
 * uh's own, at the base commit); the agent then gets a private `.git` of its own: alternates to
 * the mirror's objects, HEAD detached at the commit, a copy of uh's index. Nothing the agent
 * writes in its `.git` reaches the mirror or uh's git dir. One git process (`read-tree`); `call`
 * bounds it.
 */
export async function createSandbox(
  cacheDir: string,
  mirror: Mirror,
  commit: string,
  operationId: string,
  now: Date,
  call: GitCallOptions = {},
): Promise<Sandbox> {
  const { name, paths } = newSandboxSlot(cacheDir, operationId);
  makeDir(paths.path);
  const dirMode = lstatSync(paths.path).mode & 0o7777;
  writeRecord(cacheDir, activeRecord({ name, path: paths.path, mirror, commit, dirMode }, operationId, now));
  writeGitDir(paths.gitDir, gitDirSpec(mirror, commit, true));
  await git(['read-tree', '--reset', '-u', commit], {
    ...call,
    cwd: paths.path,
    gitDir: paths.gitDir,
    workTree: paths.path,
    env: { GIT_INDEX_FILE: paths.index },
  });
  const indexStamp = fileStamp(paths.index);
  writeAgentGitDir(paths, mirror, commit);
  return { name, path: paths.path, mirror, commit, warm: false, dirMode, indexStamp };
}

/** Refuse anything that is not a direct child of the sandboxes root. */
export function guardSandboxPath(cacheDir: string, path: string): void {
  const root = realpathSync(sandboxesRoot(cacheDir));
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith('..') || rel.includes(sep) || rel.startsWith('.')) {
    throw new UhError('sandbox', `refusing to remove ${path}: not a sandbox under ${root}`, {
      hint: 'this is a bug; please report it',
    });
  }
}

/** Delete the worktree and uh's private dir behind the path guard; the mirror is not touched. */
export async function removeSandbox(
  cacheDir: string,
  record: Pick<SandboxRecord, 'name' | 'path' | 'mirror'>,
  call: GitCallOptions = {},
): Promise<void> {
  guardSandboxPath(cacheDir, record.path);
  void call;
  const paths = sandboxPaths(record.path);
  // However deep the agent nested its directories (past PATH_MAX): `removeTree` walks openat-style.
  if (!removeTree(paths.path) || !removeTree(paths.privateDir))
    throw new UhError('sandbox', `sandbox ${paths.path} could not be removed`, {
      hint: 'check its permissions (an entry the worker cannot write), then run `uh gc` again',
    });
  rmSync(metaPath(cacheDir, record.name), { force: true });
}

/** Keep a finished sandbox until `keepUntil`, then a sweep collects it. */
export function retainSandbox(
  cacheDir: string,
  sandbox: Sandbox,
  operationId: string,
  keepUntil: Date,
  createdAt: Date,
  made: Pick<SandboxRecord, 'backend' | 'base'> = {},
): void {
  writeRecord(cacheDir, {
    ...made,
    name: sandbox.name,
    path: sandbox.path,
    mirror: sandbox.mirror.path,
    operation_id: operationId,
    commit: sandbox.commit,
    created_at: createdAt.toISOString(),
    keep_until: keepUntil.toISOString(),
    state: 'retained',
  });
}
