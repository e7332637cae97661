/**
 * One walk of the worktree before the diff, for what git would leave out of it silently or refuse
 * outright; each is a scope violation named by its path, so it can never be missing from the
 * review unnoticed:
 * - `nested_repository`: any entry named `.git` below the top (a gitfile, a git dir);
 * - `name_refused_by_git`: a component git's `verify_path` refuses (`.GIT`, `.git.`, `git~1`,
 *   `a\.git`, a symlink named `.gitmodules`…): `git add` of it fails the whole staging;
 * - `path_too_deep` / `path_too_long`: a path past `PathBounds` (git skips a directory it cannot
 *   open, past PATH_MAX, with only a warning). The violation names the first path past the bound;
 *   nothing below it is walked, so the walk itself never nears PATH_MAX.
 * The same walk lists the empty directories (`walkTree`), which the diff cannot show.
 * Nothing is followed: entries are judged by `lstat`, a symlink is never entered. Pure but for reads.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_PATH_BOUNDS, type PathBounds } from '../../shared/path-bounds.js';
import type { ScopeViolation } from './scope-check.js';

/**
 * What git 2.39 refuses on every platform (core.protectNTFS is on by default): a part of a
 * component (split at `\`, a separator on NTFS) that is `.git` in any case, or its NTFS short name
 * `git~1`, followed only by dots and spaces or an alternate stream (`:x`).
 */
const DOTGIT = /^(\.git|git~1)[. ]*(:.*)?$/i;
/** A symlink git refuses: `.gitmodules` or its NTFS short names, in any case. */
const DOTGITMODULES = /^(\.gitmodules|gitmod~\d|gi7eba~\d)[. ]*(:.*)?$/i;

/** Whether git refuses a path component (`symlink`: the entry is a symlink). Pure. */
export function refusedByGit(name: string, symlink: boolean): boolean {
  const parts = name.split('\\');
  if (parts.some((part) => DOTGIT.test(part))) return true;
  return symlink && parts.some((part) => DOTGITMODULES.test(part));
}

/** Every violation in the tree at `worktree`, its own top `.git` excepted, sorted by path. */
export function treeViolations(worktree: string, bounds: PathBounds = DEFAULT_PATH_BOUNDS): ScopeViolation[] {
  return walkTree(worktree, bounds).violations;
}

/** What one walk finds: the violations, and the empty directories (git records none; the checks would see them). */
export interface TreeWalk {
  violations: ScopeViolation[];
  /** Relative paths of directories with no entry at all (a Python namespace package, say). */
  emptyDirs: string[];
}

/**
 * What `walkTree` may take without walking: the violations and empty directories at or below the
 * directory `rel`, when something else already knows them (an overlay sandbox's directory the
 * mission never wrote in is the base's: overlay-tree-facts.ts); null: walk it.
 */
export type WalkShortcut = (rel: string) => TreeWalk | null;

export function walkTree(
  worktree: string,
  bounds: PathBounds = DEFAULT_PATH_BOUNDS,
  shortcut: WalkShortcut = () => null,
): TreeWalk {
  const out: TreeWalk = { violations: [], emptyDirs: [] };
  const walk = (dir: string, rel: string, depth: number): void => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    if (names.length === 0 && rel !== '') out.emptyDirs.push(rel);
    for (const name of names.sort()) {
      const path = rel === '' ? name : `${rel}/${name}`;
      const st = lstatSync(join(dir, name), { throwIfNoEntry: false });
      const reason = violation(name, path, depth + 1, st?.isSymbolicLink() === true, bounds);
      if (reason === 'top_git_dir') continue;
      if (reason !== null) out.violations.push({ path, reason });
      else if (st?.isDirectory()) {
        const known = shortcut(path);
        if (known === null) walk(join(dir, name), path, depth + 1);
        else {
          out.violations.push(...known.violations);
          out.emptyDirs.push(...known.emptyDirs);
        }
      }
    }
  };
  walk(worktree, '', 0);
  return out;
}

function violation(
  name: string,
  path: string,
  depth: number,
  symlink: boolean,
  bounds: PathBounds,
): ScopeViolation['reason'] | 'top_git_dir' | null {
  if (name === '.git') return depth === 1 ? 'top_git_dir' : 'nested_repository';
  if (refusedByGit(name, symlink)) return 'name_refused_by_git';
  if (depth > bounds.maxDepth) return 'path_too_deep';
  if (Buffer.byteLength(path) > bounds.maxBytes) return 'path_too_long';
  return null;
}
