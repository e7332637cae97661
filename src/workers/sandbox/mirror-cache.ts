/**
 * One bare mirror per repository (local path or git URL) under `<cache>/mirrors/`, fetched only
 * when the wanted commit is missing. Refs resolve to commits before anything runs. Concurrent
 * missions on the same repository serialise on a per-mirror lock for clone and fetch only.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createHash } from 'node:crypto';
import { UhError } from '../../shared/errors.js';
import { isRemoteUrl } from '../../shared/contracts/load-mission.js';
import { git, GitError, type GitCallOptions } from './git.js';
import { withFileLock } from './file-lock.js';

export interface Mirror {
  path: string;
  url: string;
  lockDir: string;
}

export function mirrorFor(cacheDir: string, url: string): Mirror {
  const key = createHash('sha256').update(url).digest('hex').slice(0, 16);
  const name = `${basename(url).replace(/\.git$/, '').replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40)}-${key}`;
  const root = join(cacheDir, 'mirrors');
  const path = join(root, `${name}.git`);
  return { path, url, lockDir: mirrorLockDir(path) };
}

/** The lock serialising clone, fetch, worktree registration and prune on one mirror. */
export function mirrorLockDir(mirrorPath: string): string {
  return mirrorPath.replace(/\.git$/, '.lock');
}

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

async function hasCommit(mirror: Mirror, rev: string, call: GitCallOptions): Promise<string | null> {
  const { stdout, code } = await git(['rev-parse', '--verify', '--quiet', `${rev}^{commit}`], { ...call, cwd: mirror.path, repository: mirror.url, okCodes: [1, 128] });
  return code === 0 ? stdout.trim() : null;
}

async function fetchMirror(mirror: Mirror, call: GitCallOptions): Promise<void> {
  await git(['fetch', '--quiet', '--force', '--tags', 'origin', '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*', '+HEAD:refs/uh/source-head'], {
    ...call,
    cwd: mirror.path,
    repository: mirror.url,
  });
}

/** Make sure the mirror exists (clone once). */
async function ensureMirror(mirror: Mirror, call: GitCallOptions): Promise<void> {
  if (existsSync(join(mirror.path, 'HEAD'))) return;
  mkdirSync(join(mirror.path, '..'), { recursive: true });
  const options = { ...call, cwd: mirror.path, repository: mirror.url };
  await unreachableAsBlocked(mirror.url, git(['clone', '--quiet', '--bare', '--', mirror.url, mirror.path], { ...options, cwd: join(mirror.path, '..') }));
  await git(['config', 'remote.origin.fetch', '+refs/heads/*:refs/heads/*'], options);
  // Worktrees of a bare mirror share its object store; keep git from pruning under a running mission.
  await git(['config', 'gc.auto', '0'], options);
}

/**
 * Resolve `ref` to a commit present in the mirror. For a local repository the ref is resolved in
 * the source itself (read-only), so `HEAD` means the user's current commit. `call` bounds every
 * git call (timeout, the operation's abort signal): a hanging clone or fetch ends and frees the lock.
 *
 * Cheap when repeated (a queue producer resolves the same ref for every mission): a commit once
 * seen in a mirror is remembered (a mirror only gains objects: `gc.auto 0`), so a full SHA the
 * mirror has costs no process at all; and concurrent callers without an abort signal that ask
 * for the same repository and ref share one resolution in flight (no result is kept after it
 * settles, so a ref moved later resolves anew).
 */
export async function resolveInMirror(cacheDir: string, url: string, ref: string, call: GitCallOptions = {}): Promise<{ mirror: Mirror; commit: string }> {
  const mirror = mirrorFor(cacheDir, url);
  if (SHA.test(ref) && knownCommits.get(mirror.path)?.has(ref) && existsSync(join(mirror.path, 'HEAD'))) return { mirror, commit: ref };
  if (call.signal) return remember(await resolveUncached(cacheDir, url, ref, call));
  const key = `${mirror.path}\0${ref}`;
  let shared = inFlight.get(key);
  if (!shared) {
    shared = resolveUncached(cacheDir, url, ref, call).then(remember).finally(() => inFlight.delete(key));
    inFlight.set(key, shared);
  }
  return shared;
}

/** Commits known present, per mirror path (never pruned from it: `gc.auto 0`). */
const knownCommits = new Map<string, Set<string>>();
/** Resolutions in flight, per mirror and ref, shared by concurrent callers. */
const inFlight = new Map<string, Promise<{ mirror: Mirror; commit: string }>>();

function remember(resolved: { mirror: Mirror; commit: string }): { mirror: Mirror; commit: string } {
  let known = knownCommits.get(resolved.mirror.path);
  if (!known) knownCommits.set(resolved.mirror.path, (known = new Set()));
  if (known.size > 10_000) known.clear();
  known.add(resolved.commit);
  return resolved;
}

async function resolveUncached(cacheDir: string, url: string, ref: string, call: GitCallOptions): Promise<{ mirror: Mirror; commit: string }> {
  if (!isRemoteUrl(url) && !existsSync(url)) {
    throw new UhError('invalid_input', `repository.url: no such directory: ${url}`, { hint: 'give a git URL or a path to a local repository' });
  }
  const mirror = mirrorFor(cacheDir, url);
  mkdirSync(join(mirror.lockDir, '..'), { recursive: true });
  if (!isRemoteUrl(url)) {
    // A local ref resolves in the source itself (read-only): `HEAD` is the user's current commit.
    const { stdout, code } = await git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { ...call, cwd: url, okCodes: [1, 128] });
    if (code !== 0) throw badRef(url, ref);
    const wanted = stdout.trim();
    // The common case takes no lock: the mirror exists and already has the commit.
    if (existsSync(join(mirror.path, 'HEAD')) && (knownCommits.get(mirror.path)?.has(wanted) || (await hasCommit(mirror, wanted, call)))) return { mirror, commit: wanted };
    return withFileLock(mirror.lockDir, async () => {
      await ensureMirror(mirror, call);
      if (!(await hasCommit(mirror, wanted, call))) await fetchMirror(mirror, call);
      if (await hasCommit(mirror, wanted, call)) return { mirror, commit: wanted };
      throw new UhError('sandbox', `commit ${wanted} (${ref}) is not reachable from any branch or tag of ${url}`, {
        hint: 'commit it on a branch, or point repository.ref at a branch or tag',
      });
    });
  }
  return withFileLock(mirror.lockDir, async () => {
    await ensureMirror(mirror, call);
    if (SHA.test(ref)) {
      const found = await hasCommit(mirror, ref, call);
      if (found) return { mirror, commit: found };
    }
    await unreachableAsBlocked(url, fetchMirror(mirror, call));
    const candidates = ref === 'HEAD' ? ['refs/uh/source-head'] : [`refs/heads/${ref}`, `refs/tags/${ref}`, ref];
    for (const candidate of candidates) {
      const found = await hasCommit(mirror, candidate, call);
      if (found) return { mirror, commit: found };
    }
    throw badRef(url, ref);
  });
}

/** A remote that cannot be cloned or fetched: exit 3 (blocked) naming repository.url, not an internal error. */
async function unreachableAsBlocked<T>(url: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (!isRemoteUrl(url) || !UhError.isInstance(error)) throw error;
    if (error instanceof GitError && error.failure === 'aborted') throw error; // a cancel, not an unreachable remote
    throw new UhError('runtime_unavailable', `repository.url: cannot reach ${url}: ${error.message}`, {
      hint: 'check the URL, the network and your git credentials (git ls-remote <url>)',
      cause: error,
    });
  }
}

function badRef(url: string, ref: string): UhError {
  return new UhError('invalid_input', `repository.ref: "${ref}" is not a branch, tag or commit of ${url}`, {
    hint: `list refs with: git ls-remote ${url}`,
  });
}
