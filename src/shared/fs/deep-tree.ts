/**
 * Size and removal of a directory tree however deep it is. A hostile agent can nest directories
 * past PATH_MAX (4,096 bytes on Linux): every call that takes a whole path (`lstat`, `rmSync`,
 * `readdir`) then fails with ENAMETOOLONG, so a plain walk counts nothing below that depth and
 * `rmSync(..., { recursive: true })` leaves the tree in place.
 *
 * Both walks here are openat-style without native code: before a path grows past ANCHOR_BYTES, the
 * directory is opened and the walk continues from `/proc/self/fd/<fd>` (the kernel resolves it to
 * that directory, so the remaining path stays short). No symlink is ever followed: entries are
 * judged by `lstat`, and a directory is opened only after `lstat` said it is one. Where /proc is
 * not mounted, removal falls back to `rm -rf --one-file-system` (GNU rm walks with openat).
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, lstatSync, openSync, readdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { constants } from 'node:fs';

/** Past this many bytes, the walk re-anchors on an open directory (well under PATH_MAX). */
const ANCHOR_BYTES = 2048;
const PROC_FD = '/proc/self/fd';

function childPath(base: string, name: string): string {
  return `${base}/${name}`;
}

/**
 * Run `visit` with a short path naming the directory `path`: `path` itself while it is short,
 * else `/proc/self/fd/<fd>` of the directory, opened for the visit (O_DIRECTORY | O_NOFOLLOW).
 */
function anchored<T>(path: string, visit: (short: string) => T): T {
  if (Buffer.byteLength(path) < ANCHOR_BYTES || !existsSync(PROC_FD)) return visit(path);
  const fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    return visit(`${PROC_FD}/${fd}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Bytes under `path`: the size of every file and symlink, directories walked without following
 * links. A tree too deep for the stack is measured by `du` (apparent sizes, GNU: openat walk).
 */
export function treeBytes(path: string): number {
  try {
    return bytesBelow(path);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    const du = spawnSync('du', ['-s', '-b', '-P', '--', path], { encoding: 'utf8' });
    return Number.parseInt(du.stdout, 10) || 0;
  }
}

function bytesBelow(path: string): number {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.size;
  let total = 0;
  try {
    anchored(path, (dir) => {
      for (const name of readdirSync(dir)) total += bytesBelow(childPath(dir, name));
    });
  } catch (error) {
    // unreadable (gone meanwhile, or no permission): what was counted stands
    if (error instanceof RangeError) throw error;
  }
  return total;
}

/** Remove `path` and everything below it, however deep; true when nothing is left. Never follows a symlink. */
export function removeTree(path: string): boolean {
  try {
    removeEntry(path);
  } catch {
    // fall back below
  }
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return true;
  spawnSync('rm', ['-rf', '--one-file-system', '--', path], { stdio: 'ignore' });
  return lstatSync(path, { throwIfNoEntry: false }) === undefined;
}

function removeEntry(path: string): void {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st === undefined) return;
  if (!st.isDirectory()) return unlinkSync(path);
  anchored(path, (dir) => {
    for (const name of readdirSync(dir)) removeEntry(childPath(dir, name));
  });
  rmdirSync(path);
}
