/**
 * The isolation plan's host walks kept across processes (docs/security.md "Root hosts" and
 * "Programs as users install them"): the root-only paths of a root host and the binds of the hidden
 * PATH directories' entries cost 15–50 ms of syscalls on every inline run, for an answer that
 * changes when the host's files do. One JSON file per walk under `<cache>/derived/host-walks/`
 * holds the answer with what it was computed from:
 *
 *   key     the walk's inputs (its skip list, PATH, the view's masks and binds)
 *   dirs    every directory the walk read, with its inode, mtime and ctime: an entry made,
 *           removed or renamed in any of them (which changes its mtime) voids the answer
 *   at      when it was walked: older than the walk's `maxAgeMs` voids it as well (a file's own
 *           chmod changes no directory)
 *
 * An answer is used only when all three hold; otherwise the walk runs and its answer is written
 * (atomically, mode 0600: the cache dir is uh's own and masked from every sandbox). A memo that
 * cannot be read, parsed or written is no memo: the walk runs. Never throws for the memo's sake.
 */
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { makeDir } from '../../shared/fs/make-dir.js';

const DirStampSchema = z.tuple([z.string(), z.string()]);
const MemoSchema = z.object({ key: z.string(), at: z.number(), dirs: z.array(DirStampSchema), value: z.unknown() });

/** What a walk returns: its answer and the directories it read, each stamped just before it read it. */
export interface Walked<T> {
  value: T;
  dirs: ReadonlyArray<readonly [string, string]>;
}

/** A directory's identity and times, or `-` when it is gone (take it before reading the directory). */
export function stamp(dir: string): string {
  try {
    const st = statSync(dir);
    return `${st.ino}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return '-';
  }
}

/** The memo file of one walk under a cache dir. */
export const hostWalkFile = (cacheDir: string, walk: string): string =>
  join(cacheDir, 'derived', 'host-walks', `${walk}.json`);

function readMemo(
  file: string,
  key: string,
  maxAgeMs: number,
  now: number,
): { value: unknown; at: number } | undefined {
  let parsed: z.infer<typeof MemoSchema>;
  try {
    parsed = MemoSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch {
    return undefined;
  }
  if (parsed.key !== key || now - parsed.at >= maxAgeMs || now < parsed.at) return undefined;
  return parsed.dirs.every(([dir, was]) => stamp(dir) === was) ? { value: parsed.value, at: parsed.at } : undefined;
}

function writeMemo(file: string, memo: z.infer<typeof MemoSchema>): void {
  try {
    makeDir(dirname(file), 0o700);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(memo), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // no memo this time: the next run walks again
  }
}

/**
 * `walk()`'s answer and when it was walked, from `file` when it was made for `key` less than `maxAgeMs` ago and no
 * directory it read has changed since; `parse` checks what the file holds (a bad one: walk again).
 * The walk stamps each directory before it reads it, so a change made while it runs voids the
 * answer next time.
 */
export function memoisedWalk<T>(
  file: string | null,
  key: string,
  maxAgeMs: number,
  parse: (value: unknown) => T | null,
  walk: () => Walked<T>,
  now = Date.now(),
): { value: T; at: number } {
  if (file !== null) {
    const held = readMemo(file, key, maxAgeMs, now);
    const value = held === undefined ? null : parse(held.value);
    if (held !== undefined && value !== null) return { value, at: held.at };
  }
  const walked = walk();
  if (file !== null) writeMemo(file, { key, at: now, dirs: walked.dirs.map(([d, s]) => [d, s]), value: walked.value });
  return { value: walked.value, at: now };
}
