/**
 * A local repository's `repository.ref` resolved by reading its files, in the common cases,
 * instead of starting `git rev-parse --verify --end-of-options <ref>^{commit}` in it (~10 ms on
 * every inline run). The answer is the commit that git would print there under uh's hardened
 * environment (`shared/git-hardening.ts`: no `GIT_DIR` or other `GIT_*` redirection, no global or
 * system config, so no `safe.directory`), or null whenever git might answer otherwise or refuse;
 * the caller then runs exactly that git command.
 *
 * Answered:
 * - where: `<repo>/.git` a directory, or a `.git` file (`gitdir: …`, and `commondir` in a linked
 *   worktree), or `<repo>` itself a bare repository; the directory, the git dir and the common dir
 *   owned by this process's effective uid (git refuses any other: "dubious ownership");
 * - how stored: files refs, sha1 or sha256, and a config `repo-format.ts` vouches for (reftable,
 *   any other extension, includes, `core.worktree`: null);
 * - which names: `HEAD` and plain ref names, looked up in git's order (`git help revisions`:
 *   `<name>`, `refs/<name>`, `refs/tags/<name>`, `refs/heads/<name>`, `refs/remotes/<name>`,
 *   `refs/remotes/<name>/HEAD`), when exactly one candidate exists and it is a detached HEAD or a
 *   branch (after symbolic refs, at most 5 deep). A tag (maybe annotated), a remote branch, two
 *   candidates (git takes the first and warns), a dangling symbolic ref, an unborn branch, a
 *   per-worktree ref, `@{…}`, `^`, `~`, `:`, a full hex id: null;
 * - values: the loose ref file, else `packed-refs` (which must not change while it is used);
 * - the commit itself: `commit-object.ts` reads it as git does, since a ref to a missing, broken
 *   or non-commit object makes git fail; unless the caller knows the id for a commit already.
 *
 * Never throws: a missing, odd or oversized file is null.
 */
import { lstatSync, readFileSync, realpathSync, statSync, type Stats } from 'node:fs';
import { join, resolve } from 'node:path';
import { isCommitObject } from './commit-object.js';
import { repoFormat } from './repo-format.js';

interface LocalGitDir {
  /** HEAD (and the per-worktree refs, never answered). */
  gitDir: string;
  /** Config, objects, refs and packed-refs. */
  commonDir: string;
  hexLength: 40 | 64;
}

interface Resolved {
  /** The ref holding the id, after symbolic refs (`HEAD` when detached). */
  name: string;
  id: string;
}

type LooseValue = { id: string } | { target: string } | 'absent' | Unsure;

const UNSURE = Symbol('unsure');
type Unsure = typeof UNSURE;

const MAX_REF_BYTES = 4096;
const MAX_CONFIG_BYTES = 64 * 1024;
const MAX_PACKED_REFS_BYTES = 4 * 1024 * 1024;
const MAX_SYMREF_DEPTH = 5;
/** git's lookup order for a name given on the command line (`ref_rev_parse_rules`). */
const RULES = ['%s', 'refs/%s', 'refs/tags/%s', 'refs/heads/%s', 'refs/remotes/%s', 'refs/remotes/%s/HEAD'];
/** Refs kept per worktree, or naming another worktree's: never read here. */
const PER_WORKTREE = /^(?:(?:refs\/)?(?:bisect|worktree|rewritten)|main-worktree|worktrees)\//;
const COMPONENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * The commit `ref` names in the repository at `repoPath` (full lowercase hex), or null: ask git.
 * `knownCommit(id)`: the caller already knows `id` names a commit (git said so in uh's mirror:
 * the name of an object is the hash of its content), so its object need not be read here.
 */
export function readLocalRef(
  repoPath: string,
  ref: string,
  knownCommit: (id: string) => boolean = () => false,
): string | null {
  if (!plainRefName(ref) || /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(ref)) return null;
  const repo = localGitDir(repoPath);
  if (!repo) return null;
  const refs = refReader(repo);
  let found: Resolved | null = null;
  for (const rule of RULES) {
    const hit = refs.resolve(rule.replace('%s', ref), 0);
    if (hit === UNSURE) return null;
    if (hit === null) continue;
    if (found) return null; // ambiguous: git takes the first and warns; leave it to git
    found = hit;
  }
  if (!found || !(found.name === 'HEAD' || found.name.startsWith('refs/heads/')) || !refs.packedUnchanged())
    return null;
  return knownCommit(found.id) || isCommitObject(join(repo.commonDir, 'objects'), found.id) ? found.id : null;
}

/** A name in a strict subset of `git check-ref-format --allow-onelevel`: components of [A-Za-z0-9._-]. */
function plainRefName(name: string): boolean {
  if (name.length > 1024 || name.startsWith('-') || name.includes('..') || PER_WORKTREE.test(name)) return false;
  return name.split('/').every((part) => COMPONENT.test(part) && !part.endsWith('.') && !part.endsWith('.lock'));
}

/** Refs by name, loose before packed; `packed-refs` read once, and checked unchanged at the end. */
function refReader(repo: LocalGitDir) {
  let packed: PackedRefs | Unsure | undefined;
  const resolveRef = (name: string, depth: number): Resolved | null | Unsure => {
    if (!name.startsWith('refs/')) {
      if (name === 'HEAD') return followValue('HEAD', looseValue(join(repo.gitDir, 'HEAD'), repo.hexLength), depth);
      return rootRefAbsent(repo, name) ? null : UNSURE;
    }
    if (PER_WORKTREE.test(name)) return UNSURE;
    const loose = looseValue(join(repo.commonDir, name), repo.hexLength);
    if (loose !== 'absent') return followValue(name, loose, depth);
    packed ??= readPackedRefs(repo);
    if (packed === UNSURE) return UNSURE;
    const id = packed.refs.get(name);
    return id === undefined ? null : { name, id };
  };
  const followValue = (name: string, value: LooseValue, depth: number): Resolved | Unsure => {
    if (value === UNSURE || value === 'absent') return UNSURE;
    if ('id' in value) return { name, id: value.id };
    if (depth >= MAX_SYMREF_DEPTH || !value.target.startsWith('refs/heads/') || !plainRefName(value.target))
      return UNSURE;
    // A symbolic ref to nothing (an unborn branch, a dangling ref git skips with a warning): git decides.
    return resolveRef(value.target, depth + 1) ?? UNSURE;
  };
  return {
    resolve: resolveRef,
    packedUnchanged: () =>
      packed === undefined || (packed !== UNSURE && fileStamp(packedRefsPath(repo)) === packed.stamp),
  };
}

/** A one-level or non-`refs/` name git would read from the git dir itself (`ORIG_HEAD`, `foo/bar`): only its absence is answered. */
function rootRefAbsent(repo: LocalGitDir, name: string): boolean {
  return [repo.gitDir, repo.commonDir].every((dir) => {
    try {
      return lstatOrNull(join(dir, name)) === null;
    } catch {
      return false;
    }
  });
}

/** lstat, or null where nothing is (ENOENT, ENOTDIR; no exception built for the common miss); throws on other errors. */
function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) ?? null;
  } catch (error) {
    if (missing(error)) return null;
    throw error;
  }
}

function missing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** A loose ref file: one id and a newline, or `ref: <name>` and a newline. A directory is no ref (git then looks in packed-refs). */
function looseValue(path: string, hexLength: number): LooseValue {
  let st: Stats | null;
  try {
    st = lstatOrNull(path);
  } catch {
    return UNSURE;
  }
  if (st === null || st.isDirectory()) return 'absent';
  const text = st.isFile() && st.size <= MAX_REF_BYTES ? readSmall(path, MAX_REF_BYTES) : null;
  if (text === null) return UNSURE;
  if (new RegExp(`^[0-9a-f]{${hexLength}}\n$`).test(text)) return { id: text.slice(0, hexLength) };
  const symbolic = /^ref: (\S+)\n$/.exec(text);
  return symbolic ? { target: symbolic[1] as string } : UNSURE;
}

function readSmall(path: string, maxBytes: number): string | null {
  try {
    const st = lstatSync(path);
    return st.isFile() && st.size <= maxBytes ? readFileSync(path, 'utf8') : null;
  } catch {
    return null;
  }
}

interface PackedRefs {
  refs: Map<string, string>;
  /** `fileStamp` of the file read ('absent' when there was none). */
  stamp: string;
}

const packedRefsPath = (repo: LocalGitDir) => join(repo.commonDir, 'packed-refs');

/** The identity and version of a file (device, inode, size, times), 'absent', or UNSURE. */
function fileStamp(path: string): string | Unsure {
  try {
    const st = lstatSync(path, { bigint: true, throwIfNoEntry: false });
    if (st === undefined) return 'absent';
    return st.isFile() && st.size <= MAX_PACKED_REFS_BYTES
      ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`
      : UNSURE;
  } catch (error) {
    return missing(error) ? 'absent' : UNSURE;
  }
}

function readPackedRefs(repo: LocalGitDir): PackedRefs | Unsure {
  const path = packedRefsPath(repo);
  const stamp = fileStamp(path);
  if (stamp === UNSURE) return UNSURE;
  if (stamp === 'absent') return { refs: new Map(), stamp };
  const text = readSmall(path, MAX_PACKED_REFS_BYTES);
  const refs = text === null ? null : parsePackedRefs(text, repo.hexLength);
  // Rewritten while read (`git pack-refs`): git decides.
  return refs && fileStamp(path) === stamp ? { refs, stamp } : UNSURE;
}

/**
 * `packed-refs`: an optional `# pack-refs with: <traits>` header, then `<id> <name>` lines, each
 * maybe followed by one `^<id>` (the peeled tag). Null on any other line, a missing final newline,
 * a name twice, or an order that contradicts the `sorted` trait (git would binary-search it and
 * could miss a ref this scan finds). Pure.
 */
export function parsePackedRefs(text: string, hexLength: number): Map<string, string> | null {
  const refs = new Map<string, string>();
  if (text === '') return refs;
  if (!text.endsWith('\n')) return null;
  const lines = text.slice(0, -1).split('\n');
  let sorted = false;
  if (lines[0]?.startsWith('#')) {
    const header = /^# pack-refs with:(.*)$/.exec(lines.shift() as string);
    if (!header) return null;
    sorted = (header[1] as string).split(' ').includes('sorted');
  }
  const refLine = new RegExp(`^([0-9a-f]{${hexLength}}) (refs/[^ ]+)$`);
  const peeledLine = new RegExp(`^\\^[0-9a-f]{${hexLength}}$`);
  let last: string | null = null;
  let peelable = false;
  for (const line of lines) {
    if (peelable && peeledLine.test(line)) {
      peelable = false;
      continue;
    }
    const match = refLine.exec(line);
    const name = match?.[2];
    if (!match || name === undefined || refs.has(name)) return null;
    if (sorted && last !== null && Buffer.compare(Buffer.from(last), Buffer.from(name)) >= 0) return null;
    refs.set(name, match[1] as string);
    last = name;
    peelable = true;
  }
  return refs;
}

/** Where the repository at `repoPath` keeps HEAD, config, objects and refs, if git would use it as we read it. */
function localGitDir(repoPath: string): LocalGitDir | null {
  const uid = process.geteuid?.();
  if (uid === undefined) return null;
  try {
    const top = realpathSync.native(repoPath);
    if (!ownedDirectory(statSync(top), uid)) return null;
    const gitDir = gitDirOf(top, uid);
    const commonDir = gitDir === null ? null : commonDirOf(gitDir, uid);
    if (gitDir === null || commonDir === null) return null;
    if (!statSync(join(commonDir, 'objects')).isDirectory() || !statSync(join(commonDir, 'refs')).isDirectory())
      return null;
    const config = readSmall(join(commonDir, 'config'), MAX_CONFIG_BYTES);
    const format = config === null ? null : repoFormat(config);
    if (!format) return null;
    // git takes a directory as a repository only when its HEAD reads as a ref or an id.
    const head = looseValue(join(gitDir, 'HEAD'), format.hexLength);
    const headSound = typeof head === 'object' && ('id' in head || head.target.startsWith('refs/'));
    return headSound ? { gitDir, commonDir, hexLength: format.hexLength } : null;
  } catch {
    return null;
  }
}

function ownedDirectory(st: Stats, uid: number): boolean {
  return st.isDirectory() && st.uid === uid;
}

/** `<top>/.git` (a directory, or a `gitdir:` file), or `<top>` itself when there is no `.git` (bare); null when odd. */
function gitDirOf(top: string, uid: number): string | null {
  const dotGit = join(top, '.git');
  const st = lstatOrNull(dotGit);
  if (st === null) return top;
  if (st.uid !== uid) return null;
  if (st.isDirectory()) return dotGit;
  const text = st.isFile() ? readSmall(dotGit, MAX_REF_BYTES) : null;
  const path = text === null ? null : /^gitdir: ([^\r\n]+)[\r\n]*$/.exec(text)?.[1];
  if (!path) return null;
  const gitDir = realpathSync.native(resolve(top, path));
  return ownedDirectory(statSync(gitDir), uid) ? gitDir : null;
}

/** The common dir a linked worktree's git dir names in `commondir`, or the git dir itself. */
function commonDirOf(gitDir: string, uid: number): string | null {
  const file = join(gitDir, 'commondir');
  const st = lstatOrNull(file);
  if (st === null) return gitDir;
  const text = st.isFile() ? readSmall(file, MAX_REF_BYTES) : null;
  const path = text === null ? null : /^([^\r\n]+)[\r\n]*$/.exec(text)?.[1];
  if (!path) return null;
  const commonDir = realpathSync.native(resolve(gitDir, path));
  return ownedDirectory(statSync(commonDir), uid) ? commonDir : null;
}
