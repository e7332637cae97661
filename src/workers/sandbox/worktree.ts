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
 *
 * The agent needs `<mirror>/objects` readable (read-only) and nothing else of the cache.
 * Removal deletes the two dirs behind a path guard; the mirror keeps no trace of a sandbox.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join, relative, sep } from 'node:path';
import { z } from 'zod';
import { UhError } from '../../shared/errors.js';
import { git, type GitCallOptions } from './git.js';
import type { Mirror } from './mirror-cache.js';

export const SandboxRecordSchema = z.object({
  name: z.string(),
  path: z.string(),
  mirror: z.string(),
  operation_id: z.string(),
  commit: z.string(),
  created_at: z.string(),
  /** ISO time after which a sweep removes it; far future while running. */
  keep_until: z.string(),
  state: z.enum(['active', 'retained']),
});
export type SandboxRecord = z.infer<typeof SandboxRecordSchema>;

export interface Sandbox {
  name: string;
  path: string;
  mirror: Mirror;
  commit: string;
}

export function sandboxesRoot(cacheDir: string): string {
  return join(cacheDir, 'sandboxes');
}

function metaPath(cacheDir: string, name: string): string {
  return join(sandboxesRoot(cacheDir), '.meta', `${name}.json`);
}

export function writeRecord(cacheDir: string, record: SandboxRecord): void {
  const path = metaPath(cacheDir, record.name);
  mkdirSync(dirname(path), { recursive: true });
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
const FAR_FUTURE = '9999-01-01T00:00:00.000Z';

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
  return { path, agentGitDir: join(path, '.git'), privateDir, gitDir: join(privateDir, 'git'), index: join(privateDir, 'index') };
}

/** A git dir of our own whose objects come read-only from the mirror's (`objects/info/alternates`). */
async function initGitDir(gitDir: string, mirror: Mirror, bare: boolean, call: GitCallOptions): Promise<void> {
  mkdirSync(gitDir, { recursive: true });
  // `--template=` (empty): no sample hooks, no `info/exclude`.
  await git(['init', '--quiet', '--template=', ...(bare ? ['--bare'] : []), '--', bare ? gitDir : dirname(gitDir)], { ...call, cwd: gitDir });
  mkdirSync(join(gitDir, 'objects', 'info'), { recursive: true });
  writeFileSync(join(gitDir, 'objects', 'info', 'alternates'), `${join(realpathSync(mirror.path), 'objects')}\n`);
}

/**
 * Check out `commit` into a new sandbox. uh's private git dir does the checkout (its index is
 * uh's own, at the base commit); the agent then gets a private `.git` of its own: alternates to
 * the mirror's objects, HEAD detached at the commit, a copy of uh's index. Nothing the agent
 * writes in its `.git` reaches the mirror or uh's git dir. `call` bounds the git calls.
 */
export async function createSandbox(cacheDir: string, mirror: Mirror, commit: string, operationId: string, now: Date, call: GitCallOptions = {}): Promise<Sandbox> {
  const root = sandboxesRoot(cacheDir);
  mkdirSync(root, { recursive: true });
  const name = `${operationId}-${randomBytes(4).toString('hex')}`;
  const paths = sandboxPaths(join(realpathSync(root), name));
  writeRecord(cacheDir, {
    name,
    path: paths.path,
    mirror: mirror.path,
    operation_id: operationId,
    commit,
    created_at: now.toISOString(),
    keep_until: FAR_FUTURE,
    state: 'active',
  });
  mkdirSync(paths.path, { recursive: true });
  await initGitDir(paths.gitDir, mirror, true, call);
  await git(['read-tree', '--reset', '-u', commit], { ...call, cwd: paths.path, gitDir: paths.gitDir, workTree: paths.path, env: { GIT_INDEX_FILE: paths.index } });
  await initGitDir(paths.agentGitDir, mirror, false, call);
  copyFileSync(paths.index, join(paths.agentGitDir, 'index'));
  writeFileSync(join(paths.agentGitDir, 'HEAD'), `${commit}\n`);
  return { name, path: paths.path, mirror, commit };
}

/** Refuse anything that is not a direct child of the sandboxes root. */
export function guardSandboxPath(cacheDir: string, path: string): void {
  const root = realpathSync(sandboxesRoot(cacheDir));
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith('..') || rel.includes(sep) || rel.startsWith('.')) {
    throw new UhError('sandbox', `refusing to remove ${path}: not a sandbox under ${root}`, { hint: 'this is a bug; please report it' });
  }
}

/** Delete the worktree and uh's private dir behind the path guard; the mirror is not touched. */
export async function removeSandbox(cacheDir: string, record: Pick<SandboxRecord, 'name' | 'path' | 'mirror'>, call: GitCallOptions = {}): Promise<void> {
  guardSandboxPath(cacheDir, record.path);
  void call;
  const paths = sandboxPaths(record.path);
  rmSync(paths.path, { recursive: true, force: true, maxRetries: 3 });
  rmSync(paths.privateDir, { recursive: true, force: true, maxRetries: 3 });
  rmSync(metaPath(cacheDir, record.name), { force: true });
}

/** Keep a finished sandbox until `keepUntil`, then a sweep collects it. */
export function retainSandbox(cacheDir: string, sandbox: Sandbox, operationId: string, keepUntil: Date, createdAt: Date): void {
  writeRecord(cacheDir, {
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
