/**
 * A reader of git's index file, versions 2 and 3 (the only ones uh's own `read-tree` writes:
 * no `index.version`, no `feature.manyFiles`, no `GIT_INDEX_VERSION` reach it), for the checks of
 * pooled sandboxes (`worktree-scrub.ts`): which paths are tracked, with which mode, object id and
 * stat data; and the entries as they lie in the file (`parseIndex`) for the diff's in-process
 * tree (`verification/index-tree.ts`). Format (git's Documentation/gitformat-index.txt): "DIRC", version, entry count; each
 * entry: ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size (32 bits each, truncated), the
 * object id (20 or 32 bytes), 16 bits of flags (v3: 16 more when the extended bit is set), the
 * path NUL-terminated and padded to a multiple of 8. Extensions after the entries are ignored.
 * Anything else (another version, a conflict stage, an unknown mode, an unsafe path) is refused
 * with null: the caller treats the sandbox as doubtful.
 */
import { readFileSync } from 'node:fs';

export const MODE_FILE = 0o100644;
export const MODE_EXEC = 0o100755;
export const MODE_SYMLINK = 0o120000;
export const MODE_GITLINK = 0o160000;
const MODES = new Set([MODE_FILE, MODE_EXEC, MODE_SYMLINK, MODE_GITLINK]);

export interface IndexEntry {
  path: string;
  mode: number;
  /** The object id, hex. */
  oid: string;
  ctimeS: number;
  ctimeNs: number;
  mtimeS: number;
  mtimeNs: number;
  ino: number;
  /** Size truncated to 32 bits (0 for an entry git smudged as racily clean). */
  size: number;
}

/** A path git would check out: relative, no empty, `.`, `..` or `.git` component. Pure. */
export function safeTrackedPath(path: string): boolean {
  if (path === '' || path.startsWith('/')) return false;
  return path.split('/').every((c) => c !== '' && c !== '.' && c !== '..' && c.toLowerCase() !== '.git');
}

/** One entry as it lies in the index buffer: offsets, mode and flags, nothing decoded. */
export interface RawIndexEntry {
  /** Where the entry (its stat data) starts; the object id follows at `at + 40`. */
  at: number;
  pathStart: number;
  /** The path's terminating NUL. */
  pathEnd: number;
  mode: number;
  flags: number;
  /** v3 extended flags (intent to add, skip-worktree), 0 when none. */
  extendedFlags: number;
}

/**
 * The entries of an index buffer, in file order, and the offset where its extensions start; null
 * when it is not one we can vouch for (another version, a conflict stage, an unknown mode, a
 * truncated entry, v3 flags in a v2 index). Paths are not judged here.
 */
export function parseIndex(buf: Buffer, hashBytes: number): { entries: RawIndexEntry[]; end: number } | null {
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC') return null;
  const version = buf.readUInt32BE(4);
  if (version !== 2 && version !== 3) return null;
  const count = buf.readUInt32BE(8);
  const entries: RawIndexEntry[] = [];
  let off = 12;
  for (let i = 0; i < count; i++) {
    const fixed = 40 + hashBytes + 2;
    if (off + fixed > buf.length) return null;
    const flags = buf.readUInt16BE(off + 40 + hashBytes);
    const extended = (flags & 0x4000) !== 0;
    if ((flags & 0x3000) !== 0 || (extended && version !== 3)) return null; // a conflict stage, or a v2 index claiming v3 flags
    if (extended && off + fixed + 2 > buf.length) return null;
    const pathStart = off + fixed + (extended ? 2 : 0);
    const end = buf.indexOf(0, pathStart);
    if (end < 0) return null;
    const mode = buf.readUInt32BE(off + 24);
    if (!MODES.has(mode)) return null;
    entries.push({
      at: off,
      pathStart,
      pathEnd: end,
      mode,
      flags,
      extendedFlags: extended ? buf.readUInt16BE(off + fixed) : 0,
    });
    // Entry length: fixed part + path + 1..8 NULs, a multiple of 8 (git's ondisk_ce_size).
    off += (pathStart - off + (end - pathStart) + 8) & ~7;
  }
  return { entries, end: off };
}

/**
 * The entries of the index at `file` (`hashBytes` 20 for sha1, 32 for sha256), or null when it is
 * not one we can vouch for, or holds more than `maxEntries` (judged by its header, before any
 * entry is decoded).
 */
export function readIndexEntries(
  file: string,
  hashBytes: number,
  maxEntries = Number.POSITIVE_INFINITY,
): IndexEntry[] | null {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch {
    return null;
  }
  if (buf.length >= 12 && buf.readUInt32BE(8) > maxEntries) return null;
  const parsed = parseIndex(buf, hashBytes);
  if (parsed === null) return null;
  const entries: IndexEntry[] = [];
  for (const raw of parsed.entries) {
    const path = buf.toString('utf8', raw.pathStart, raw.pathEnd);
    if (!safeTrackedPath(path)) return null;
    const off = raw.at;
    entries.push({
      path,
      mode: raw.mode,
      oid: buf.toString('hex', off + 40, off + 40 + hashBytes),
      ctimeS: buf.readUInt32BE(off),
      ctimeNs: buf.readUInt32BE(off + 4),
      mtimeS: buf.readUInt32BE(off + 8),
      mtimeNs: buf.readUInt32BE(off + 12),
      ino: buf.readUInt32BE(off + 20),
      size: buf.readUInt32BE(off + 36),
    });
  }
  return entries;
}
