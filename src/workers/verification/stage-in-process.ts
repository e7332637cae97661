/**
 * `git add --all --force` of the diff capture's listed paths, in process, for a plain change: the
 * blobs hashed and written loose into the sandbox's private object store, the index state
 * (`index-tree.ts`) changed as `add` changes it, the cache tree's entries for every changed
 * directory dropped. With the tree built in process too, a changed sandbox's diff costs two git
 * processes (the listing, the diff) instead of four.
 *
 * A plain change is one where git stores a file's bytes as they are and no path rule applies, so
 * hashing them is all `add` does. Anything else is refused (false) and git stages as before:
 * - any `.gitattributes` (in the index, listed, or in a directory of a listed path: text, eol and
 *   filter attributes change what git stores, unless neutralised), or a private git dir whose
 *   config is not exactly the one uh wrote (`core.autocrlf`, `core.filemode`…), or one whose
 *   `info/` holds anything but uh's neutral attributes (`NEUTRAL_ATTRIBUTES`);
 * - a path component outside a conservative set (ASCII letters, digits and `._+@=,-`, not
 *   starting with `.git`, not ending with a dot), so git's own path checks never differ;
 * - a parent that is not a plain directory (a symlink on the way), a listed path that is gone or
 *   is neither a regular file nor a symlink;
 * - more than MAX_PATHS paths, a file over MAX_FILE_BYTES, or MAX_TOTAL_BYTES in all.
 *
 * Safer than git in one way: a file is read by `readRegularFile` (O_NOFOLLOW, judged by fstat of
 * what was opened), so a file swapped for a symlink after the listing cannot pull a host file
 * into a blob, and one that grows under the read is staged by git instead.
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { gitDirConfig, NEUTRAL_ATTRIBUTES } from '../sandbox/git-dir.js';
import { MODE_EXEC, MODE_FILE, MODE_SYMLINK } from '../sandbox/index-file.js';
import { writeLooseObject, type IndexEntry, type IndexState } from './index-tree.js';
import { readRegularFile } from './read-regular.js';

const MAX_PATHS = 200;
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_TOTAL_BYTES = 8 * 1024 * 1024;
/** One path component git stores as is on every platform, with no rule of its own. */
const PLAIN_COMPONENT = /^[A-Za-z0-9_+@=,-][A-Za-z0-9._+@=,-]*$/;

export interface StageInput {
  state: IndexState;
  workDir: string;
  /** uh's private git dir of the sandbox (`sandboxPaths().gitDir`). */
  gitDir: string;
  baseCommit: string;
  /** The listing: every path to stage, and which of them are deleted (`parseListing`). */
  listed: { paths: readonly string[]; deleted: readonly string[] };
  /** The blobs' ids only, none written (the caller writes them, from what is returned, if git needs them). */
  hashOnly?: boolean;
}

/** One staged path: its new entry and the bytes its blob holds (null: deleted). */
export type StagedFile = (IndexEntry & { body: Buffer }) | null;

/**
 * Stage the listed paths into `input.state`, and give what was staged, by path (latin1, as the
 * state's entries); null (the state untouched) when the change is not plain or a file cannot be
 * read (git then stages, and says what is wrong).
 */
export function stageInProcess(input: StageInput): Map<string, StagedFile> | null {
  const { state, gitDir, baseCommit, listed } = input;
  if (listed.paths.length > MAX_PATHS || !plainGitDir(gitDir, baseCommit)) return null;
  if (state.entries.some((e) => isAttributesPath(e.path)) || !listed.paths.every(plainPath)) return null;
  let changes: Map<string, StagedFile> | null;
  try {
    changes = readChanges(input);
  } catch {
    return null;
  }
  if (changes === null) return null;
  apply(state, changes);
  return changes;
}

/** Each listed path's new entry (null: deleted), its blob written; null when one is not plain. */
function readChanges({ state, workDir, gitDir, listed, hashOnly }: StageInput): Map<string, StagedFile> | null {
  const gone = new Set(listed.deleted);
  const changes = new Map<string, StagedFile>();
  const dirs = new Map<string, boolean>();
  let total = 0;
  for (const path of listed.paths) {
    const key = Buffer.from(path, 'utf8').toString('latin1');
    if (gone.has(path)) {
      changes.set(key, null);
      continue;
    }
    if (!parentsArePlain(workDir, path, dirs)) return null;
    const read = readStaged(join(workDir, path));
    if (read === null || (total += read.body.length) > MAX_TOTAL_BYTES) return null;
    changes.set(key, {
      path: key,
      mode: read.mode,
      id: writeLooseObject(hashOnly ? null : join(gitDir, 'objects'), state.hash, 'blob', read.body),
      body: read.body,
    });
  }
  return changes;
}

/** The private git dir is as uh wrote it in the ways that change what `add` stores. */
function plainGitDir(gitDir: string, baseCommit: string): boolean {
  try {
    const info = readdirOrNull(join(gitDir, 'info'));
    if (info !== null && (info.join() !== 'attributes' || !neutralAttributes(gitDir))) return false;
    return readFileSync(join(gitDir, 'config'), 'utf8') === gitDirConfig({ bare: true, commit: baseCommit });
  } catch {
    return false;
  }
}

function readdirOrNull(dir: string): string[] | null {
  return lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() === true ? readdirSync(dir) : null;
}

function neutralAttributes(gitDir: string): boolean {
  const path = join(gitDir, 'info', 'attributes');
  return lstatSync(path).isFile() && readFileSync(path, 'utf8') === NEUTRAL_ATTRIBUTES;
}

function isAttributesPath(path: string): boolean {
  return path === '.gitattributes' || path.endsWith('/.gitattributes');
}

/** One path component this module stages (see the module comment). */
export function plainComponent(name: string): boolean {
  return PLAIN_COMPONENT.test(name) && !name.endsWith('.') && !name.toLowerCase().startsWith('.git');
}

function plainPath(path: string): boolean {
  return path.split('/').every(plainComponent);
}

/** Every directory on the way to `path` is a real directory (no symlink) with no `.gitattributes`; memoised per dir. */
function parentsArePlain(workDir: string, path: string, dirs: Map<string, boolean>): boolean {
  const parts = path.split('/');
  for (let n = 0; n < parts.length; n++) {
    const dir = parts.slice(0, n).join('/');
    let plain = dirs.get(dir);
    if (plain === undefined) {
      const full = join(workDir, dir);
      plain =
        (n === 0 || lstatSync(full, { throwIfNoEntry: false })?.isDirectory() === true) &&
        lstatSync(join(full, '.gitattributes'), { throwIfNoEntry: false }) === undefined;
      dirs.set(dir, plain);
    }
    if (!plain) return false;
  }
  return true;
}

/** What `add` stores for the path: a symlink's target, or a regular file's bytes with its exec bit. Null for anything else. */
function readStaged(full: string): { mode: number; body: Buffer } | null {
  const st = lstatSync(full, { throwIfNoEntry: false });
  if (st?.isSymbolicLink()) return { mode: MODE_SYMLINK, body: readlinkSync(full, { encoding: 'buffer' }) };
  if (!st?.isFile()) return null;
  const read = readRegularFile(full, MAX_FILE_BYTES);
  return read && { mode: read.mode & 0o100 ? MODE_EXEC : MODE_FILE, body: read.body };
}

/** The changes into the state, entries kept in index order; the cache tree loses every changed directory. */
function apply(state: IndexState, changes: Map<string, StagedFile>): void {
  const added = [...changes.values()]
    .filter((e): e is IndexEntry & { body: Buffer } => e !== null)
    .map(({ path, mode, id }): IndexEntry => ({ path, mode, id }))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
  const kept = state.entries.filter((e) => !changes.has(e.path));
  const merged: IndexEntry[] = [];
  let k = 0;
  for (const entry of added) {
    while (k < kept.length && kept[k]!.path < entry.path) merged.push(kept[k++]!);
    merged.push(entry);
  }
  while (k < kept.length) merged.push(kept[k++]!);
  state.entries = merged;
  for (const path of changes.keys()) {
    const parts = path.split('/');
    for (let n = 0; n < parts.length; n++) state.cached.delete(parts.slice(0, n).join('/'));
  }
}
