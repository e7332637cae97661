/**
 * `git write-tree` in process, for the diff capture: the tree of uh's scratch index right after
 * `git add` staged the changes, built from the index's entries and its cache-tree extension, and
 * written as loose objects into the sandbox's private object store. It saves the diff one git
 * process. The blobs are git's own (`add` hashed them, filters and attributes applied); only the
 * tree objects, a pure function of the entries, are made here.
 *
 * Like git, a subtree the cache-tree extension still holds as valid over exactly its entries is
 * taken as it is (`add` invalidated every directory it changed); every other tree is built.
 *
 * The reader vouches only for what it fully understands. Anything else is null, and the caller
 * runs `git write-tree`: an index version other than 2 or 3, an entry with extended flags
 * (intent to add, skip-worktree), an unmerged entry, a mode git does not store in a tree (a
 * sparse directory entry among them), a file and a directory of one name, a split index, or a
 * checksum that does not match the file.
 *
 * Index format (gitformat-index): the entries as `sandbox/index-file.ts` reads them, then
 * extensions (4-byte signature, 4-byte size) and the checksum of all that precedes it.
 */
import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { parseIndex } from '../sandbox/index-file.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface IndexEntry {
  /** The path as bytes (latin1 keeps every byte as one char, and orders them as git does). */
  path: string;
  mode: number;
  id: Buffer;
}

interface CachedTree {
  /** How many index entries the subtree covers. */
  entries: number;
  id: Buffer;
}

/** An index as this reader understands it; `stage-in-process.ts` changes it as `git add` would. */
export interface IndexState {
  /** In index order (by path bytes). */
  entries: IndexEntry[];
  /** The cache tree's valid subtrees by directory path ('' the root); a change must drop its ancestors'. */
  cached: Map<string, CachedTree>;
  hash: 'sha1' | 'sha256';
}

interface TreeBuild extends IndexState {
  /** Null: the ids only, nothing written. */
  objectsDir: string | null;
}

const STAT_BYTES = 40;
const FLAG_EXTENDED = 0x4000;
const NAME_MASK = 0xfff;

/** Thrown inside the reader for anything it cannot vouch for; never leaves this module. */
class Unvouched extends Error {}

/**
 * The id of the index's tree, its tree objects written to `objectsDir`; null when the reader
 * cannot vouch for the index (the caller then asks git). `hashBytes`: 20 (SHA-1) or 32 (SHA-256).
 */
export function writeIndexTree(indexPath: string, objectsDir: string, hashBytes: 20 | 32): string | null {
  const state = readIndexState(indexPath, hashBytes);
  return state && writeStateTree(state, objectsDir);
}

/** The index at `indexPath`, or null when this reader cannot vouch for it (or there is none). */
export function readIndexState(indexPath: string, hashBytes: 20 | 32): IndexState | null {
  return vouched(() => {
    const hash = hashBytes === 32 ? 'sha256' : 'sha1';
    return { ...readIndex(readFileSync(indexPath), hashBytes, hash), hash };
  });
}

/**
 * The tree of `state`, its tree objects written to `objectsDir` (null: the id only, for a caller
 * no git process will read them for); null for a file and a directory of one name.
 */
export function writeStateTree(state: IndexState, objectsDir: string | null): string | null {
  return vouched(() => buildTree({ ...state, objectsDir }, 0, state.entries.length, '').toString('hex'));
}

function vouched<T>(read: () => T): T | null {
  try {
    return read();
  } catch (error) {
    if (error instanceof Unvouched || (error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function unvouched(why: string): never {
  throw new Unvouched(why);
}

/** The entries and the valid cache-tree nodes of an index file (v2 or v3, one stage, no split: `parseIndex`). */
function readIndex(
  file: Buffer,
  hashBytes: number,
  hash: 'sha1' | 'sha256',
): { entries: IndexEntry[]; cached: Map<string, CachedTree> } {
  if (file.length < 12 + hashBytes) unvouched('not an index');
  const body = file.subarray(0, file.length - hashBytes);
  if (!createHash(hash).update(body).digest().equals(file.subarray(body.length))) unvouched('checksum');
  const parsed = parseIndex(body, hashBytes) ?? unvouched('not an index git write-tree would take as is');
  const entries = parsed.entries.map((raw): IndexEntry => {
    if (raw.flags & FLAG_EXTENDED) unvouched('extended flags');
    // The flags hold the name's length, or NAME_MASK for a name that long or longer.
    const length = raw.flags & NAME_MASK;
    const found = raw.pathEnd - raw.pathStart;
    if (length < NAME_MASK ? found !== length : found < NAME_MASK) unvouched('bad name');
    return {
      path: file.toString('latin1', raw.pathStart, raw.pathEnd),
      mode: raw.mode,
      id: file.subarray(raw.at + STAT_BYTES, raw.at + STAT_BYTES + hashBytes),
    };
  });
  return { entries, cached: readExtensions(body, parsed.end, hashBytes) };
}

/** The valid nodes of the TREE extension by directory path ('' the root); other extensions skipped, a split index refused. */
function readExtensions(body: Buffer, from: number, hashBytes: number): Map<string, CachedTree> {
  const cached = new Map<string, CachedTree>();
  for (let at = from; at < body.length;) {
    if (at + 8 > body.length) unvouched('truncated extension');
    const signature = body.toString('latin1', at, at + 4);
    const size = body.readUInt32BE(at + 4);
    const end = at + 8 + size;
    if (end > body.length) unvouched('truncated extension');
    if (signature === 'link' || signature === 'sdir') unvouched(`extension ${signature}`);
    if (signature === 'TREE') readCacheTree(body.subarray(at + 8, end), 0, null, hashBytes, cached);
    at = end;
  }
  return cached;
}

/** One cache-tree node and its subtrees, depth first: "name\0<entries> <subtrees>\n[id]". Returns the offset after it. */
function readCacheTree(
  data: Buffer,
  at: number,
  parent: string | null,
  hashBytes: number,
  out: Map<string, CachedTree>,
): number {
  const nul = data.indexOf(0, at);
  const lf = nul < 0 ? -1 : data.indexOf(0x0a, nul);
  if (lf < 0) unvouched('bad cache tree');
  const name = data.toString('latin1', at, nul);
  const counts = /^(-1|\d+) (\d+)$/.exec(data.toString('latin1', nul + 1, lf));
  if (!counts) unvouched('bad cache tree');
  const path = parent === null ? '' : parent === '' ? name : `${parent}/${name}`;
  let next = lf + 1;
  const entries = Number(counts[1]);
  if (entries >= 0) {
    if (next + hashBytes > data.length) unvouched('bad cache tree');
    out.set(path, { entries, id: data.subarray(next, next + hashBytes) });
    next += hashBytes;
  }
  for (let n = Number(counts[2]); n > 0; n--) next = readCacheTree(data, next, path, hashBytes, out);
  return next;
}

/**
 * The tree of entries [from, to), all under `dir` ('' the root), in index order, which is tree
 * order: a directory's entries all begin "<name>/", so it sorts where git sorts "<name>/".
 */
function buildTree(build: TreeBuild, from: number, to: number, dir: string): Buffer {
  const valid = build.cached.get(dir);
  if (valid && valid.entries === to - from) return valid.id;
  const prefix = dir === '' ? 0 : dir.length + 1;
  const parts: Buffer[] = [];
  const names = new Set<string>();
  for (let i = from; i < to;) {
    const rest = build.entries[i]!.path.slice(prefix);
    const slash = rest.indexOf('/');
    const name = slash < 0 ? rest : rest.slice(0, slash);
    if (name === '' || names.has(name)) unvouched(`empty or repeated name in ${dir || 'the root'}`);
    names.add(name);
    if (slash < 0) {
      const entry = build.entries[i++]!;
      // A tree spells an entry's mode in octal, as the index holds it (`parseIndex` admits only the four tree modes).
      parts.push(Buffer.from(`${entry.mode.toString(8)} ${name}\0`, 'latin1'), entry.id);
      continue;
    }
    const sub = dir === '' ? name : `${dir}/${name}`;
    let end = i + 1;
    while (end < to && build.entries[end]!.path.startsWith(`${sub}/`)) end++;
    parts.push(Buffer.from(`40000 ${name}\0`, 'latin1'), buildTree(build, i, end, sub));
    i = end;
  }
  return writeLooseObject(build.objectsDir, build.hash, 'tree', Buffer.concat(parts));
}

/** An object written loose, as git writes one (read-only, renamed into place) unless it is there (or `objectsDir` is null); its id. */
export function writeLooseObject(
  objectsDir: string | null,
  hash: 'sha1' | 'sha256',
  type: 'blob' | 'tree',
  body: Buffer,
): Buffer {
  const object = Buffer.concat([Buffer.from(`${type} ${body.length}\0`, 'latin1'), body]);
  const id = createHash(hash).update(object).digest();
  if (objectsDir === null) return id;
  const hex = id.toString('hex');
  const dir = join(objectsDir, hex.slice(0, 2));
  const path = join(dir, hex.slice(2));
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) {
    makeDir(dir);
    const tmp = join(dir, `tmp_obj_${process.pid}_${hex.slice(2, 10)}`);
    writeFileSync(tmp, deflateSync(object), { mode: 0o444 });
    renameSync(tmp, path);
  }
  return id;
}
