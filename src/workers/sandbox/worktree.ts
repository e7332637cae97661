/**
 * Sandboxes: a detached git worktree of the repository mirror at the base commit, under
 * `<cache>/sandboxes/`, never inside the user's checkout. Removal goes through
 * `git worktree remove` behind a path guard; a record in `.meta/` drives retention.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync, renameSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join, relative, sep } from 'node:path';
import { z } from 'zod';
import { UhError } from '../../shared/errors.js';
import { git, type GitCallOptions } from './git.js';
import { withFileLock } from './file-lock.js';
import { mirrorLockDir, type Mirror } from './mirror-cache.js';

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

/** `call` bounds the git calls (timeout, abort signal). */
export async function createSandbox(cacheDir: string, mirror: Mirror, commit: string, operationId: string, now: Date, call: GitCallOptions = {}): Promise<Sandbox> {
  const root = sandboxesRoot(cacheDir);
  mkdirSync(root, { recursive: true });
  const name = `${operationId}-${randomBytes(4).toString('hex')}`;
  const path = join(realpathSync(root), name);
  writeRecord(cacheDir, {
    name,
    path,
    mirror: mirror.path,
    operation_id: operationId,
    commit,
    created_at: now.toISOString(),
    keep_until: FAR_FUTURE,
    state: 'active',
  });
  // Registering a worktree races with `worktree prune` in other processes (prune can delete the
  // half-made admin dir), so registration and prune share the mirror's lock; the checkout, the
  // slow part, runs outside it so concurrent missions still check out in parallel.
  await withFileLock(mirror.lockDir, () => git(['worktree', 'add', '--detach', '--no-checkout', '--quiet', path, commit], { ...call, cwd: mirror.path }));
  await git(['reset', '--hard', '--quiet', commit], { ...call, cwd: path });
  return { name, path, mirror, commit };
}

/** Refuse anything that is not a direct child of the sandboxes root. */
export function guardSandboxPath(cacheDir: string, path: string): void {
  const root = realpathSync(sandboxesRoot(cacheDir));
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith('..') || rel.includes(sep) || rel.startsWith('.')) {
    throw new UhError('sandbox', `refusing to remove ${path}: not a sandbox under ${root}`, { hint: 'this is a bug; please report it' });
  }
}

export async function removeSandbox(cacheDir: string, record: Pick<SandboxRecord, 'name' | 'path' | 'mirror'>, call: GitCallOptions = {}): Promise<void> {
  guardSandboxPath(cacheDir, record.path);
  if (existsSync(record.path)) {
    try {
      await git(['worktree', 'remove', '--force', '--force', record.path], { ...call, cwd: record.mirror });
    } catch {
      // The mirror is gone or the worktree is broken: the guarded path is ours to delete, and
      // the mirror forgets the worktree on prune.
      if (existsSync(join(record.path, '.git')) && statSync(join(record.path, '.git')).isFile()) {
        rmSync(record.path, { recursive: true, force: true });
      }
      if (existsSync(record.mirror)) {
        await withFileLock(mirrorLockDir(record.mirror), () => git(['worktree', 'prune'], { ...call, cwd: record.mirror })).catch(() => undefined);
      }
    }
  }
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
