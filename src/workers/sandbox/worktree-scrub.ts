/**
 * Putting a used sandbox's worktree back to its base commit, and proving it is there, without a
 * process: two walks against uh's own index (`index-file.ts`), around uh's one
 * `git read-tree --reset -u` that restores modified and deleted tracked files.
 *
 * - `scrubWorktree` (before read-tree): removes every entry that is not a tracked path, or not of
 *   a tracked kind: untracked and ignored files, nested repositories and any `.git` below the top
 *   (git itself never lists a `.git` entry, so `git clean` and `git status` would keep one),
 *   FIFOs and sockets (git ignores them too), a directory or a symlink where a tracked directory
 *   was, anything inside a submodule's directory (git never looks there). The top-level `.git`
 *   is the caller's (it is rebuilt). Nothing is followed: a symlink is removed as a link.
 * - `worktreeDoubt` (before read-tree, to skip it when no tracked file changed; after it, as the
 *   proof): walks again and names the first thing that is not exactly
 *   the base commit as checked out by uh: an extra entry, a missing or retyped path, a tracked
 *   file whose stat data is not what uh's index recorded and whose content does not hash to the
 *   recorded object. Permission bits of tracked files and directories are set back (a mode is
 *   not content, and git leaves a directory's alone).
 * - `worktreeUnchanged` (the diff's first question, read-only): true only when git's listing
 *   would come to nothing that changes the tree: every tracked path there with its kind, its
 *   owner x bit and its content, and nothing else. Any doubt (an extra entry, a submodule, a
 *   racy entry it may not hash) is false, and git answers. `worktreeAdditions` is the same
 *   walk listing the new regular files too, under the base commit's ignore rules.
 */
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, readdirSync, readFileSync, readlinkSync, rmSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';
import { MODE_EXEC, MODE_GITLINK, MODE_SYMLINK, type IndexEntry } from './index-file.js';

interface Tracked {
  files: Map<string, IndexEntry>;
  dirs: Set<string>;
}

function tracked(entries: readonly IndexEntry[]): Tracked {
  const files = new Map<string, IndexEntry>();
  const dirs = new Set<string>();
  for (const e of entries) {
    files.set(e.path, e);
    for (let i = e.path.indexOf('/'); i >= 0; i = e.path.indexOf('/', i + 1)) dirs.add(e.path.slice(0, i));
  }
  return { files, dirs };
}

type Visit = (
  rel: string,
  abs: string,
  kind: 'extra' | 'file' | 'gitlink' | 'dir',
  isDir: boolean,
  isFileOrLink: boolean,
) => boolean;

/** Walk the worktree against the tracked set; `visit` returns false to stop descending into a dir. */
function walk(root: string, t: Tracked, visit: Visit, stop: () => boolean = () => false): void {
  const stack: string[] = [''];
  while (stack.length > 0 && !stop()) {
    const dirRel = stack.pop() as string;
    for (const d of readdirSync(dirRel === '' ? root : join(root, dirRel), { withFileTypes: true })) {
      if (dirRel === '' && d.name === '.git') continue;
      const rel = dirRel === '' ? d.name : `${dirRel}/${d.name}`;
      const abs = join(root, rel);
      const isDir = d.isDirectory();
      const isFileOrLink = d.isFile() || d.isSymbolicLink();
      const entry = t.files.get(rel);
      const kind = entry ? (entry.mode === MODE_GITLINK ? 'gitlink' : 'file') : t.dirs.has(rel) ? 'dir' : 'extra';
      if (visit(rel, abs, kind, isDir, isFileOrLink) && kind === 'dir' && isDir) stack.push(rel);
    }
  }
}

const remove = (abs: string) => rmSync(abs, { recursive: true, force: true });

/** Remove from the worktree everything that is not a tracked path of a tracked kind (see the module comment). */
export function scrubWorktree(root: string, entries: readonly IndexEntry[]): void {
  walk(root, tracked(entries), (_rel, abs, kind, isDir, isFileOrLink) => {
    if (kind === 'extra') remove(abs);
    else if (kind === 'file' && !isFileOrLink) remove(abs);
    else if (kind === 'gitlink' && (!isDir || readdirSync(abs).length > 0))
      remove(abs); // read-tree makes it again, empty
    else if (kind === 'dir' && !isDir) remove(abs);
    return true;
  });
}

/** The git object id of a file's (or a symlink's) content. */
function blobId(abs: string, symlink: boolean, algorithm: 'sha1' | 'sha256'): string {
  const body = symlink ? Buffer.from(readlinkSync(abs)) : readFileSync(abs);
  return createHash(algorithm).update(`blob ${body.length}\0`).update(body).digest('hex');
}

const lo32 = (n: bigint) => Number(n & 0xffffffffn);

/**
 * The stat data git recorded equals the file's now (git's own fields, 32-bit as git stores them),
 * and the entry is not racy: recorded with an mtime at or after `racyFromNs` (the index file's
 * own mtime), a change within the same clock tick could keep every field, so it is hashed (git's
 * racy-git rule).
 */
function statMatches(e: IndexEntry, st: BigIntStats, racyFromNs: bigint): boolean {
  if (BigInt(e.mtimeS) * 1_000_000_000n + BigInt(e.mtimeNs) >= racyFromNs) return false;
  return (
    lo32(st.ctimeNs / 1_000_000_000n) === e.ctimeS &&
    Number(st.ctimeNs % 1_000_000_000n) === e.ctimeNs &&
    lo32(st.mtimeNs / 1_000_000_000n) === e.mtimeS &&
    Number(st.mtimeNs % 1_000_000_000n) === e.mtimeNs &&
    lo32(st.ino) === e.ino &&
    lo32(st.size) === e.size
  );
}

/**
 * What is wrong with one tracked file, or null. Its kind must match; its content must be the
 * recorded object (stat data as git recorded it, else the hash). Permission bits are not content:
 * git checks only the owner's x bit, and not at all within the second of the checkout, so a file
 * whose content is proven gets its mode set back (`dirMode`: a directory's bits as checked out).
 */
function fileDoubt(
  abs: string,
  e: IndexEntry,
  dirMode: number,
  algorithm: 'sha1' | 'sha256',
  racyFromNs: bigint,
): string | null {
  const st = lstatSync(abs, { bigint: true });
  const symlink = e.mode === MODE_SYMLINK;
  if (symlink ? !st.isSymbolicLink() : !st.isFile()) return 'a tracked path changed kind';
  if (!statMatches(e, st, racyFromNs) && blobId(abs, symlink, algorithm) !== e.oid)
    return 'content differs from the base commit';
  const expected = e.mode === MODE_EXEC ? dirMode : dirMode & 0o666;
  if (!symlink && Number(st.mode & 0o7777n) !== expected) chmodSync(abs, expected);
  return null;
}

/** A tracked directory gets its checkout mode back (git never sets a directory's mode). */
function dirModeRepaired(abs: string, dirMode: number): null {
  if ((lstatSync(abs).mode & 0o7777) !== dirMode) chmodSync(abs, dirMode);
  return null;
}

/** Bounds of `worktreeUnchanged`: past them git's own listing is the faster (or the only) judge. */
export interface UnchangedBounds {
  /** Tracked paths at most. */
  maxEntries: number;
  /** Bytes hashed at most (racy entries, and any whose stat data moved). */
  maxHashBytes: number;
}

/** Bounds of `worktreeAdditions`, besides those of `worktreeUnchanged`. */
export interface AdditionBounds extends UnchangedBounds {
  /** New files listed at most. */
  maxAdded: number;
  /** A new entry's name uh's in-process staging takes as it is (anything else: git lists). */
  plainName: (name: string) => boolean;
  /** The base commit's ignore rules: an ignored new entry is left out, and all it holds. */
  ignored: (path: string, isDir: boolean) => boolean;
}

/** A name the ignore rules are matched against as git matches them (one byte, one character). */
const ASCII_NAME = /^[\x20-\x7e]+$/;

/**
 * True when the worktree (its top-level `.git` aside) holds exactly the tracked entries of the
 * index file `indexFile`, each of its kind, with its recorded x bit and content, and nothing else:
 * what `ls-files --modified --deleted --others` would list then stages to the base tree. Changes
 * nothing on disk. False on any doubt, the caller asks git: an extra entry (ignored or not), a
 * submodule, a changed mode, content that must be hashed past `bounds` or where attributes could
 * convert it (a tracked `.gitattributes`).
 */
export function worktreeUnchanged(
  root: string,
  indexFile: string,
  entries: readonly IndexEntry[],
  algorithm: 'sha1' | 'sha256',
  bounds: UnchangedBounds,
): boolean {
  return (
    worktreeAdditions(root, indexFile, entries, algorithm, {
      ...bounds,
      maxAdded: 0,
      plainName: () => false,
      ignored: () => false,
    })?.length === 0
  );
}

/**
 * The new files of a worktree whose tracked entries are all exactly as `worktreeUnchanged` wants
 * them: their paths, sorted as git sorts them; what `ls-files --others` lists under the ignore
 * rules `bounds.ignored` (an ignored entry is skipped whole, whatever it is). Read-only. Null on
 * any doubt, the caller asks git: a tracked entry changed or not provable (as in
 * `worktreeUnchanged`), a new entry that is not a regular file or a directory holding some, a
 * `.git` anywhere below the top (a nested repository), an empty new directory, a name outside
 * printable ASCII or, unless ignored, outside `bounds.plainName`, more than `bounds.maxAdded` new
 * files.
 */
export function worktreeAdditions(
  root: string,
  indexFile: string,
  entries: readonly IndexEntry[],
  algorithm: 'sha1' | 'sha256',
  bounds: AdditionBounds,
): string[] | null {
  if (entries.length > bounds.maxEntries) return null;
  if (entries.some((e) => e.mode === MODE_GITLINK)) return null;
  let budget = entries.some((e) => e.path === '.gitattributes' || e.path.endsWith('/.gitattributes'))
    ? 0
    : bounds.maxHashBytes;
  const racyFromNs = lstatSync(indexFile, { bigint: true }).mtimeNs;
  const t = tracked(entries);
  const added: string[] = [];
  let same = true;
  let seen = 0;
  const fileSame = (abs: string, e: IndexEntry): boolean => {
    const st = lstatSync(abs, { bigint: true });
    const symlink = e.mode === MODE_SYMLINK;
    if (symlink ? !st.isSymbolicLink() : !st.isFile() || (e.mode === MODE_EXEC) !== ((st.mode & 0o100n) !== 0n))
      return false;
    if (statMatches(e, st, racyFromNs)) return true;
    budget -= Number(st.size);
    return budget >= 0 && blobId(abs, symlink, algorithm) === e.oid;
  };
  walk(
    root,
    t,
    (rel, abs, kind, isDir, isFileOrLink) => {
      if (!same) return false; // the walk finishes the directory it is in
      if (kind === 'file') {
        seen += 1;
        same = isFileOrLink && fileSame(abs, t.files.get(rel) as IndexEntry);
      } else if (kind === 'dir') same = isDir;
      else same = newEntries(rel, abs, isDir, added, bounds);
      return same;
    },
    () => !same,
  );
  return same && seen === t.files.size ? added.sort() : null;
}

/** A new entry's regular files pushed to `added`; false when it is anything `worktreeAdditions` leaves to git. */
function newEntries(rel: string, abs: string, isDir: boolean, added: string[], bounds: AdditionBounds): boolean {
  const name = rel.slice(rel.lastIndexOf('/') + 1);
  if (name === '.git' || !ASCII_NAME.test(name)) return false;
  if (bounds.ignored(rel, isDir)) return true;
  if (!bounds.plainName(name)) return false;
  if (!isDir) {
    if (!lstatSync(abs).isFile()) return false;
    added.push(rel);
    return added.length <= bounds.maxAdded;
  }
  const inside = readdirSync(abs, { withFileTypes: true });
  if (inside.length === 0) return false;
  return inside.every((d) => newEntries(`${rel}/${d.name}`, join(abs, d.name), d.isDirectory(), added, bounds));
}

/**
 * Null when the worktree (its top-level `.git` aside) is exactly the tracked entries of the index
 * file `indexFile`; else the first doubt, naming the path (the walk stops there).
 */
export function worktreeDoubt(
  root: string,
  indexFile: string,
  entries: readonly IndexEntry[],
  dirMode: number,
  algorithm: 'sha1' | 'sha256',
): string | null {
  const racyFromNs = lstatSync(indexFile, { bigint: true }).mtimeNs;
  const t = tracked(entries);
  let doubt: string | null = null;
  let seen = 0;
  walk(
    root,
    t,
    (rel, abs, kind, isDir, isFileOrLink) => {
      if (doubt !== null) return false;
      if (kind === 'extra') doubt = 'an untracked entry';
      else if (kind === 'gitlink')
        doubt = isDir && readdirSync(abs).length === 0 ? null : 'a submodule directory is not empty';
      else if (kind === 'dir') doubt = isDir ? dirModeRepaired(abs, dirMode) : 'a tracked directory changed kind';
      else
        doubt = isFileOrLink
          ? fileDoubt(abs, t.files.get(rel) as IndexEntry, dirMode, algorithm, racyFromNs)
          : 'a tracked file changed kind';
      if (kind === 'file' || kind === 'gitlink') seen += 1;
      if (doubt !== null) doubt = `${rel}: ${doubt}`;
      return doubt === null;
    },
    () => doubt !== null,
  );
  if (doubt === null && seen !== t.files.size) doubt = `${t.files.size - seen} tracked path(s) missing`;
  return doubt;
}

/**
 * The files `ls-files --others --ignored` would list under the ignore rules `ignored`: every
 * untracked file (or symlink) that is ignored itself or lies below an ignored directory, sorted
 * as git sorts them. Read-only. Null on any doubt, the caller asks git: more than `maxEntries`
 * tracked entries or `maxVisited` entries walked, a submodule, a `.git` below the top, a name
 * outside printable ASCII.
 */
export function worktreeIgnored(
  root: string,
  entries: readonly IndexEntry[],
  ignored: (path: string, isDir: boolean) => boolean,
  bounds: { maxEntries: number; maxVisited: number },
): string[] | null {
  if (entries.length > bounds.maxEntries || entries.some((e) => e.mode === MODE_GITLINK)) return null;
  const out: string[] = [];
  let visited = 0;
  let doubt = false;
  // Below an untracked directory: ignored entries are listed whole, the others looked into.
  const untracked = (rel: string, abs: string, isDir: boolean, under: boolean): boolean => {
    visited += 1;
    const name = rel.slice(rel.lastIndexOf('/') + 1);
    if (name === '.git' || !ASCII_NAME.test(name) || visited > bounds.maxVisited) return false;
    const hidden = under || ignored(rel, isDir);
    if (!isDir) {
      if (hidden) out.push(rel);
      return true;
    }
    return readdirSync(abs, { withFileTypes: true }).every((d) =>
      untracked(`${rel}/${d.name}`, join(abs, d.name), d.isDirectory(), hidden),
    );
  };
  walk(
    root,
    tracked(entries),
    (rel, abs, kind, isDir) => {
      if (doubt) return false;
      if (kind === 'extra') doubt = !untracked(rel, abs, isDir, false);
      else if (!ASCII_NAME.test(rel.slice(rel.lastIndexOf('/') + 1))) doubt = true;
      return !doubt;
    },
    () => doubt,
  );
  return doubt ? null : out.sort();
}
