/**
 * Is an object id a sound commit of a local object store, judged the way `git rev-parse
 * <id>^{commit}` judges it: the object read from a pack (git looks there first) or else loose,
 * inflated to exactly its stated size, of type commit, hashing to its id, and opening with the
 * `tree` and `parent` lines git's commit parser requires. Anything this reader cannot decide (a
 * delta in a pack, the same object in two packs, an object only in an alternate store, a pack
 * whose index does not match it) is `false`: the caller then asks git.
 *
 * Bounded: a commit over 1 MiB is not read, and a pack index is searched by positioned reads of a
 * few bytes each, never read whole.
 */
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';

const MAX_COMMIT_BYTES = 1024 * 1024;
const MAX_PACKS = 1000;
const OBJ_COMMIT = 1;
/** A file this reader cannot vouch for: the whole answer becomes `false`. */
const ODD = Symbol('odd');

/** True when `id` (lowercase hex, 40 or 64) names a sound commit in `objectsDir`. */
export function isCommitObject(objectsDir: string, id: string): boolean {
  const packed = packedCommit(objectsDir, id);
  const body = packed === 'absent' ? looseCommit(objectsDir, id) : packed;
  return body !== null && soundCommit(id, body);
}

/** The hash of the object is its id, and git's commit parser accepts its first lines. */
function soundCommit(id: string, body: Buffer): boolean {
  const hash = createHash(id.length === 64 ? 'sha256' : 'sha1')
    .update(`commit ${body.length}\0`)
    .update(body)
    .digest('hex');
  if (hash !== id) return false;
  const hex = `[0-9a-fA-F]{${id.length}}`;
  const head = body.toString('latin1');
  // parse_commit_buffer: "tree <id>\n" and more after it, then any "parent <id>\n" lines, each whole.
  const tree = new RegExp(`^tree ${hex}\n`).exec(head);
  if (!tree || body.length <= tree[0].length) return false;
  const parentLine = id.length + 'parent \n'.length;
  for (let at = tree[0].length; at + parentLine - 1 < body.length && head.startsWith('parent ', at); at += parentLine) {
    if (!new RegExp(`^parent ${hex}\n`).test(head.slice(at, at + parentLine)) || body.length <= at + parentLine)
      return false;
  }
  return true;
}

/** A loose object's commit body, or null when it is absent, not a commit or not whole. */
function looseCommit(objectsDir: string, id: string): Buffer | null {
  const path = join(objectsDir, id.slice(0, 2), id.slice(2));
  try {
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st?.isFile() || st.size > MAX_COMMIT_BYTES) return null;
    const compressed = readFileSync(path);
    const { buffer, engine } = inflateSync(compressed, {
      info: true,
      maxOutputLength: MAX_COMMIT_BYTES + 64,
    }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    if (engine.bytesWritten !== compressed.length) return null; // bytes after the zlib stream: git refuses the object
    const nul = buffer.indexOf(0);
    const header = nul > 0 ? /^commit (0|[1-9][0-9]{0,8})$/.exec(buffer.subarray(0, nul).toString('latin1')) : null;
    const body = buffer.subarray(nul + 1);
    return header && body.length === Number(header[1]) ? body : null;
  } catch {
    return null;
  }
}

/** The commit body from the one pack that holds `id`; 'absent' when no pack does; null when undecided. */
function packedCommit(objectsDir: string, id: string): Buffer | null | 'absent' {
  const packDir = join(objectsDir, 'pack');
  let names: string[];
  try {
    names = readdirSync(packDir).filter((n) => n.endsWith('.idx')); // git opens every *.idx with its .pack
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : null;
  }
  if (names.length > MAX_PACKS) return null;
  const oid = Buffer.from(id, 'hex');
  const hits: Array<IndexHit & { pack: string }> = [];
  for (const name of names) {
    const hit = withFile(join(packDir, name), (fd, size) => indexEntry(fd, size, oid));
    if (hit === ODD) return null;
    if (hit) hits.push({ pack: join(packDir, `${name.slice(0, -'.idx'.length)}.pack`), ...hit });
  }
  const [hit] = hits;
  if (!hit) return 'absent';
  if (hits.length > 1) return null; // which copy git reads first is its own choice
  const body = withFile(hit.pack, (fd, size) => packEntry(fd, size, hit));
  return body === ODD ? null : body;
}

interface IndexHit {
  offset: number;
  objects: number;
  /** The pack's own checksum as the index records it (the pack's last bytes must equal it). */
  packHash: Buffer;
}

/** `read` over an open regular file; ODD when it is not one, or on any error. */
function withFile<T>(path: string, read: (fd: number, size: number) => T): T | typeof ODD {
  let fd: number | null = null;
  try {
    fd = openSync(path, 'r');
    const st = fstatSync(fd);
    return st.isFile() ? read(fd, st.size) : ODD;
  } catch {
    return ODD;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  const got = readSync(fd, buffer, 0, length, position);
  if (got !== length) throw new Error('short read');
  return buffer;
}

/**
 * Where a version-2 pack index puts `oid` (null: not there), after the size and fan-out checks
 * git makes; ODD for an index git would refuse or read otherwise (version 1, a bad size).
 */
function indexEntry(fd: number, size: number, oid: Buffer): IndexHit | null | typeof ODD {
  const hashLen = oid.length;
  const head = readAt(fd, 0, 8 + 256 * 4);
  if (head.readUInt32BE(0) !== 0xff744f63 || head.readUInt32BE(4) !== 2) return ODD;
  const fanout = (i: number) => head.readUInt32BE(8 + i * 4);
  for (let i = 1; i < 256; i++) if (fanout(i) < fanout(i - 1)) return ODD;
  const n = fanout(255);
  const names = 8 + 256 * 4;
  const minSize = names + n * (hashLen + 8) + 2 * hashLen;
  if (size < minSize || size > minSize + Math.max(0, n - 1) * 8) return ODD;
  const first = oid[0] as number;
  let lo = first === 0 ? 0 : fanout(first - 1);
  let hi = fanout(first);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const cmp = Buffer.compare(readAt(fd, names + mid * hashLen, hashLen), oid);
    if (cmp === 0)
      return {
        offset: packOffset(fd, size, n, hashLen, mid),
        objects: n,
        packHash: readAt(fd, size - 2 * hashLen, hashLen),
      };
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return null;
}

/** The object's offset in the pack (a 31-bit offset, or an index into the 64-bit table). */
function packOffset(fd: number, size: number, n: number, hashLen: number, position: number): number {
  const small = readAt(fd, 8 + 256 * 4 + n * (hashLen + 4) + position * 4, 4).readUInt32BE(0);
  if ((small & 0x80000000) === 0) return small;
  const at = 8 + 256 * 4 + n * (hashLen + 8) + (small & 0x7fffffff) * 8;
  if (at + 8 > size - 2 * hashLen) throw new Error('offset outside the index');
  const large = readAt(fd, at, 8).readBigUInt64BE(0);
  if (large > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error('offset too large');
  return Number(large);
}

/** A whole, undeltified commit at `hit.offset` in a pack that matches its index; else null. */
function packEntry(fd: number, size: number, hit: IndexHit): Buffer | null {
  const hashLen = hit.packHash.length;
  const header = readAt(fd, 0, 12);
  if (
    header.toString('latin1', 0, 4) !== 'PACK' ||
    ![2, 3].includes(header.readUInt32BE(4)) ||
    header.readUInt32BE(8) !== hit.objects
  )
    return null;
  if (size < 12 + hashLen || !readAt(fd, size - hashLen, hashLen).equals(hit.packHash)) return null;
  const end = size - hashLen;
  if (hit.offset < 12 || hit.offset >= end) return null;
  const entry = readAt(fd, hit.offset, Math.min(16, end - hit.offset));
  let byte = entry[0] as number;
  const type = (byte >> 4) & 7;
  let length = byte & 15;
  let used = 1;
  for (let shift = 4; byte & 0x80; shift += 7) {
    if (used >= entry.length || shift > 28) return null;
    byte = entry[used++] as number;
    length += (byte & 0x7f) * 2 ** shift;
  }
  // A delta (6, 7) would need its base to know the type; other types are not commits.
  if (type !== OBJ_COMMIT || length > MAX_COMMIT_BYTES) return null;
  const start = hit.offset + used;
  const compressed = readAt(fd, start, Math.min(length + (length >> 2) + 64, end - start));
  const body = inflateSync(compressed, { maxOutputLength: length + 1 });
  return body.length === length ? body : null;
}
