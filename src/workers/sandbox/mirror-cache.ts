/**
 * One bare mirror per repository (local path or git URL) under `<cache>/mirrors/`, fetched only
 * when the wanted commit is missing. A mirror keeps no remote in its config, and is checked
 * before each use (`mirrorDoubts`) and cloned again on any doubt. Refs resolve to commits before anything runs. Concurrent
 * missions on the same repository serialise on a per-mirror lock for clone and fetch only.
 */
import { existsSync, readdirSync, renameSync, rmSync, statSync, readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { basename, join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { assertNotOption } from '../../shared/git-hardening.js';
import { UhError } from '../../shared/errors.js';
import { isRemoteUrl } from '../../shared/contracts/load-mission.js';
import { git, GitError, type GitCallOptions } from './git.js';
import { withFileLock } from './file-lock.js';
import { IN_PROCESS_GIT, type GitPath } from '../git-path.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface Mirror {
  path: string;
  url: string;
  lockDir: string;
}

export function mirrorFor(cacheDir: string, url: string): Mirror {
  const key = createHash('sha256').update(url).digest('hex').slice(0, 16);
  const name = `${basename(url)
    .replace(/\.git$/, '')
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .slice(0, 40)}-${key}`;
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
  assertNotOption(rev, 'repository.ref');
  const { stdout, code } = await git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`], {
    ...call,
    cwd: mirror.path,
    repository: mirror.url,
    okCodes: [1, 128],
  });
  return code === 0 ? stdout.trim() : null;
}

/**
 * Fetch by URL (the mirror keeps no remote: its config names no path an agent could follow to
 * the user's checkout). `--prune --force`: a ref written into the mirror by anyone is replaced
 * or dropped by the source's own refs.
 */
async function fetchMirror(mirror: Mirror, call: GitCallOptions): Promise<void> {
  assertNotOption(mirror.url, 'repository.url');
  await git(
    [
      'fetch',
      '--quiet',
      '--force',
      '--prune',
      '--tags',
      '--end-of-options',
      mirror.url,
      '+refs/heads/*:refs/heads/*',
      '+refs/tags/*:refs/tags/*',
      '+HEAD:refs/uh/source-head',
    ],
    {
      ...call,
      cwd: mirror.path,
      repository: mirror.url,
      network: true,
    },
  );
}

/**
 * Make sure a sound mirror exists: one that fails `mirrorDoubts` is discarded and cloned again.
 * `--no-local`: a local repository is read through git's transport, never hardlinked or copied
 * file by file (its alternates and info files stay its own). `--template=`: no hooks, no info.
 */
async function ensureMirror(mirror: Mirror, call: GitCallOptions): Promise<void> {
  if (existsSync(mirror.path) && mirrorDoubts(mirror.path, await checkedMirrorConfig(mirror.path, call)).length > 0)
    discardMirror(mirror.path);
  if (existsSync(join(mirror.path, 'HEAD'))) return;
  assertNotOption(mirror.url, 'repository.url');
  makeDir(join(mirror.path, '..'));
  const options = { ...call, cwd: mirror.path, repository: mirror.url };
  const clone = ['clone', '--quiet', '--bare', '--no-local', '--template=', '--', mirror.url, mirror.path];
  await unreachableAsBlocked(mirror.url, git(clone, { ...options, cwd: join(mirror.path, '..'), network: true }));
  await git(['config', '--remove-section', 'remote.origin'], { ...options, okCodes: [1, 5, 128] });
  // Sandboxes borrow the mirror's objects by alternates; keep git from pruning under a running mission.
  await git(['config', 'gc.auto', '0'], options);
  // Stamped now, while the clone's config is fresh: the next mission on this mirror starts no git
  // process to read it, and the commit this one resolves is remembered in the stamp.
  await checkedMirrorConfig(mirror.path, call);
}

/** The mirror's config as `key=value` lines (read by git, nothing run), or null when unreadable. */
async function readMirrorConfig(path: string, call: GitCallOptions): Promise<string[] | null> {
  if (!existsSync(join(path, 'config'))) return null;
  const { stdout, code } = await git(['config', '--file', join(path, 'config'), '--null', '--list'], {
    ...call,
    cwd: path,
    okCodes: [1, 128],
  });
  return code === 0
    ? stdout
        .split('\0')
        .filter(Boolean)
        .map((entry) => entry.replace('\n', '='))
    : null;
}

/**
 * uh's stamp of one mirror, kept BESIDE it (`<name>.verified.json`, in the cache dir every
 * sandbox has masked; agents only ever read the mirror's objects): the digest of the config file
 * git last parsed without doubt, with its lines, and commits known present (a mirror only gains
 * objects: `gc.auto 0`). A stamp binds to the mirror directory's identity (device, inode, birth
 * time), so a mirror deleted and cloned again starts with none.
 */
const MirrorStampSchema = z.object({
  mirror: z.string(),
  config_sha256: z.string(),
  config: z.array(z.string()),
  commits: z.array(z.string().regex(SHA)).max(10_000),
});
type MirrorStamp = z.infer<typeof MirrorStampSchema>;
const MAX_STAMP_BYTES = 2 * 1024 * 1024;
const MAX_CONFIG_BYTES = 256 * 1024;
const STAMP_COMMITS = 1000;

function stampPath(mirrorPath: string): string {
  return mirrorPath.replace(/\.git$/, '.verified.json');
}

function mirrorIdentity(mirrorPath: string): string | null {
  try {
    const st = statSync(mirrorPath, { bigint: true });
    return st.isDirectory() ? `${st.dev}:${st.ino}:${st.birthtimeNs}` : null;
  } catch {
    return null;
  }
}

function configDigest(mirrorPath: string): string | null {
  try {
    const file = join(mirrorPath, 'config');
    const st = statSync(file);
    if (!st.isFile() || st.size > MAX_CONFIG_BYTES) return null;
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return null;
  }
}

/** The mirror's stamp when it belongs to this very mirror directory, else null. */
function readStamp(mirrorPath: string): MirrorStamp | null {
  try {
    const file = stampPath(mirrorPath);
    if (statSync(file).size > MAX_STAMP_BYTES) return null;
    const stamp = MirrorStampSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return stamp.success && stamp.data.mirror === mirrorIdentity(mirrorPath) ? stamp.data : null;
  } catch {
    return null;
  }
}

/** Written whole then renamed; a lost update only costs a git process later. */
function writeStamp(mirrorPath: string, stamp: MirrorStamp): void {
  try {
    const tmp = `${stampPath(mirrorPath)}.${randomBytes(4).toString('hex')}`;
    writeFileSync(tmp, JSON.stringify({ ...stamp, commits: stamp.commits.slice(-STAMP_COMMITS) }));
    renameSync(tmp, stampPath(mirrorPath));
  } catch {
    // A stamp that cannot be written costs a git process next time, nothing else.
  }
}

/**
 * The mirror's config lines, by git, unless the config file is byte-identical to the one git
 * parsed last time without doubt (the stamp): then no process runs. A config that changed in any
 * byte is parsed by git again and judged by `mirrorDoubts`.
 */
async function checkedMirrorConfig(path: string, call: GitCallOptions): Promise<string[] | null> {
  const digest = configDigest(path);
  const stamp = digest ? readStamp(path) : null;
  if (stamp && stamp.config_sha256 === digest) return stamp.config;
  const config = await readMirrorConfig(path, call);
  const identity = mirrorIdentity(path);
  // Stamped only when the bytes git parsed are the bytes hashed (unchanged across the git call).
  if (config && digest && identity && configDigest(path) === digest && mirrorDoubts(path, config).length === 0) {
    writeStamp(path, { mirror: identity, config_sha256: digest, config, commits: stamp?.commits ?? [] });
  }
  return config;
}

/** Was `commit` seen in this mirror, by this process or (through the stamp) an earlier one? */
function knownInMirror(mirrorPath: string, commit: string): boolean {
  return knownCommits.get(mirrorPath)?.has(commit) === true || readStamp(mirrorPath)?.commits.includes(commit) === true;
}

/** Config keys uh's clone writes, with the value required when it matters. */
const MIRROR_CONFIG: Readonly<Record<string, string | null>> = {
  'core.repositoryformatversion': null,
  'core.filemode': null,
  'core.bare': 'true',
  'core.ignorecase': null,
  'core.precomposeunicode': null,
  'core.symlinks': null,
  'core.logallrefupdates': null,
  'extensions.objectformat': null,
  'gc.auto': '0',
};

/**
 * Why a mirror cannot be trusted, or [] when it can: a config key uh did not write (a hook path,
 * fsmonitor, filter, remote…), hooks, info files (exclude, attributes, grafts), alternates,
 * replace refs or linked worktrees. Checked before each use. Exported for `uh doctor` and tests.
 */
export function mirrorDoubts(path: string, config: string[] | null): string[] {
  const doubts: string[] = [];
  if (config === null) return ['config unreadable'];
  for (const line of config) {
    const eq = line.indexOf('=');
    const key = (eq < 0 ? line : line.slice(0, eq)).toLowerCase();
    const value = eq < 0 ? '' : line.slice(eq + 1);
    if (!(key in MIRROR_CONFIG)) doubts.push(`config ${key}`);
    else if (MIRROR_CONFIG[key] !== null && MIRROR_CONFIG[key] !== value) doubts.push(`config ${key}=${value}`);
  }
  for (const dir of ['hooks', 'info', 'worktrees', 'refs/replace']) {
    if (existsSync(join(path, dir)) && readdirSync(join(path, dir)).length > 0) doubts.push(`${dir}/ not empty`);
  }
  for (const file of ['objects/info/alternates', 'objects/info/http-alternates', 'commondir', 'shallow']) {
    if (existsSync(join(path, file))) doubts.push(file);
  }
  return doubts;
}

/** Move a doubtful mirror aside and delete it (under the mirror lock). */
function discardMirror(path: string): void {
  const aside = `${path}.discarded-${randomBytes(4).toString('hex')}`;
  renameSync(path, aside);
  rmSync(aside, { recursive: true, force: true });
  rmSync(stampPath(path), { force: true });
}

/** A mirror that exists and passes `mirrorDoubts` (no lock: reads only). */
async function mirrorSound(mirror: Mirror, call: GitCallOptions): Promise<boolean> {
  return (
    existsSync(join(mirror.path, 'HEAD')) &&
    mirrorDoubts(mirror.path, await checkedMirrorConfig(mirror.path, call)).length === 0
  );
}

/**
 * Resolve `ref` to a commit present in the mirror. For a local repository the ref is resolved in
 * the source itself (read-only), so `HEAD` means the user's current commit: read from its ref files
 * when `local-ref.ts` is sure of git's answer (no process), else by `git rev-parse`. `call` bounds every
 * git call (timeout, the operation's abort signal): a hanging clone or fetch ends and frees the lock.
 *
 * Cheap when repeated (a queue producer resolves the same ref for every mission): a commit once
 * seen in a mirror is remembered (a mirror only gains objects: `gc.auto 0`), so a full SHA the
 * mirror has costs no process at all; and concurrent callers without an abort signal that ask
 * for the same repository and ref share one resolution in flight (no result is kept after it
 * settles, so a ref moved later resolves anew).
 */
export async function resolveInMirror(
  cacheDir: string,
  url: string,
  ref: string,
  call: GitCallOptions = {},
  gitPath: GitPath = IN_PROCESS_GIT,
): Promise<{ mirror: Mirror; commit: string }> {
  const mirror = mirrorFor(cacheDir, url);
  if (SHA.test(ref) && knownCommits.get(mirror.path)?.has(ref) && existsSync(join(mirror.path, 'HEAD')))
    return { mirror, commit: ref };
  if (call.signal) return remember(await resolveUncached(cacheDir, url, ref, call, gitPath));
  const key = `${mirror.path}\0${ref}\0${gitPath.kind}`;
  let shared = inFlight.get(key);
  if (!shared) {
    shared = resolveUncached(cacheDir, url, ref, call, gitPath)
      .then(remember)
      .finally(() => inFlight.delete(key));
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
  const stamp = readStamp(resolved.mirror.path);
  if (stamp && !stamp.commits.includes(resolved.commit))
    writeStamp(resolved.mirror.path, { ...stamp, commits: [...stamp.commits, resolved.commit] });
  return resolved;
}

async function resolveUncached(
  cacheDir: string,
  url: string,
  ref: string,
  call: GitCallOptions,
  gitPath: GitPath,
): Promise<{ mirror: Mirror; commit: string }> {
  if (!isRemoteUrl(url) && !existsSync(url)) {
    throw new UhError('invalid_input', `repository.url: no such directory: ${url}`, {
      hint: 'give a git URL or a path to a local repository',
    });
  }
  const mirror = mirrorFor(cacheDir, url);
  makeDir(join(mirror.lockDir, '..'));
  if (!isRemoteUrl(url)) {
    // A local ref resolves in the source itself (read-only): `HEAD` is the user's current commit.
    assertNotOption(ref, 'repository.ref');
    // Read from its files when that is certain to be git's answer (no process), else asked of git.
    // A commit the mirror is known to hold needs no reading of the source's object (uh's mirror
    // vouches that id is a commit: git resolved it there as one). Its stamp is read once per id.
    const seen = new Map<string, boolean>();
    const known = (id: string): boolean => {
      if (!seen.has(id)) seen.set(id, knownInMirror(mirror.path, id));
      return seen.get(id) === true;
    };
    const wanted = gitPath.localRef(url, ref, known) ?? (await sourceCommit(url, ref, call));
    // The common case takes no lock: the mirror exists and already has the commit.
    if ((await mirrorSound(mirror, call)) && (known(wanted) || (await hasCommit(mirror, wanted, call))))
      return { mirror, commit: wanted };
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

/** `ref` resolved by git in the local source repository itself (read-only); a bad ref is `invalid_input`. */
async function sourceCommit(url: string, ref: string, call: GitCallOptions): Promise<string> {
  const { stdout, code } = await git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`], {
    ...call,
    cwd: url,
    okCodes: [1, 128],
  });
  if (code !== 0) throw badRef(url, ref);
  return stdout.trim();
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
