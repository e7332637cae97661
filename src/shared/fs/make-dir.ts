/**
 * `mkdir -p` that always ends. Node's `mkdirSync(path, { recursive: true })` (and its promise
 * form) never returns, spinning at 100 % CPU and deaf to SIGTERM, when a directory on the way
 * exists but the kernel answers ENOENT for the next one: a dangling symlink (a cache dir on a disk
 * that is not mounted) or any path under /proc. Its native walk steps back on ENOENT and forward
 * on EEXIST, forever. This one creates a component at a time and fails with an error naming the
 * directory: a dangling symlink on the way as such, a parent that exists but still gives ENOENT.
 */
import { lstatSync, mkdirSync, readlinkSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { UhError } from '../errors.js';

const code = (error: unknown) => (error as NodeJS.ErrnoException).code;
const HINT = 'point the setting that names this directory (UH_CACHE_DIR, --state-dir, …) at a real, writable directory';

/** Create `path` and its missing parents (each with `mode`, like `mkdirSync` recursive); an existing directory is fine. */
export function makeDir(path: string, mode?: number): void {
  if (tryMake(path, mode)) return;
  const parent = dirname(path);
  if (parent === path) throw new UhError('invalid_input', `cannot create directory ${path}: the root does not exist`);
  makeDir(parent, mode);
  if (!tryMake(path, mode)) {
    throw new UhError(
      'invalid_input',
      `cannot create directory ${path}: ${parent} exists but cannot hold it (a dangling symlink on the way, or a special filesystem such as /proc)`,
      {
        hint: HINT,
      },
    );
  }
}

/** True when `path` is now a directory; false when its parent is missing; anything else throws. */
function tryMake(path: string, mode: number | undefined): boolean {
  try {
    mkdirSync(path, mode === undefined ? undefined : { mode });
    return true;
  } catch (error) {
    if (code(error) === 'ENOENT') return false;
    if (code(error) !== 'EEXIST') throw error;
    if (statSync(path, { throwIfNoEntry: false })?.isDirectory()) return true;
    if (lstatSync(path).isSymbolicLink()) {
      throw new UhError(
        'invalid_input',
        `cannot create directory ${path}: it is a symlink to ${readlinkSync(path)}, which does not exist (a disk that is not mounted?)`,
        { hint: HINT },
      );
    }
    throw error;
  }
}
