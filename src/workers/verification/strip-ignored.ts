/**
 * Before the diff and the checks, the files the agent created that the base commit's ignore rules
 * hide are removed from the worktree, so the checks run on exactly the tree the diff shows and a
 * promotion ships (docs/security.md "What is checked is what ships"): an ignored
 * `__pycache__/x.pyc` of the right version can no longer make broken code pass. A mission keeps
 * named ones with `sandbox.keep_ignored` (globs); those are staged, so they are in the diff and
 * the scope check like any other change.
 *
 * The listing is git's (`ls-files --others --ignored`) over uh's private git dir and index, under
 * the base commit's ignore rules only (`base-ignore.ts`: a `.gitignore` the agent wrote hides
 * nothing more); one git process, none when the base ignores nothing. Removal never follows a
 * symlink: every directory on the way must be a real one, and a directory the removal empties is
 * removed too, as is every empty directory the agent left (`removeEmptyDirs`): git records none,
 * and an empty directory can still be imported as a package.
 */
import { lstatSync, rmdirSync, unlinkSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import picomatch from 'picomatch';
import { git, type GitCallOptions } from '../sandbox/git.js';
import { sandboxPaths } from '../sandbox/worktree.js';
import type { GitPath } from '../git-path.js';
import { keptExcludesFile, readBaseFacts } from './base-ignore.js';

export interface StripInput {
  workDir: string;
  baseCommit: string;
  /** `sandbox.keep_ignored`: ignored files matching one of these stay, and are staged. */
  keep: readonly string[];
  /** Paths already flagged (`tree-violations.ts`): neither removed nor kept. */
  excluded: readonly string[];
  /** A scratch dir outside the sandbox (the operation dir). */
  scratchDir: string;
  /** uh's cache of base facts (`baseFactsDir`), or null. */
  factsDir: string | null;
  /** The fast path's listing (`GitPath.listIgnored`); null from it, or absent: git lists. */
  listInProcess?: GitPath['listIgnored'];
  /**
   * Only these paths can be new (an overlay's upper layer names them): git lists only under them,
   * and none means nothing to strip. Absent: the whole worktree.
   */
  pathspecs?: readonly string[];
}

export interface Stripped {
  /** Ignored files removed before the checks (sorted). */
  removed: string[];
  /** Ignored files kept by `sandbox.keep_ignored`, to be staged (sorted). */
  kept: string[];
}

/** Remove the agent's ignored files (those `keep` names stay); see the module comment. */
export async function stripIgnored(input: StripInput, call: GitCallOptions = {}): Promise<Stripped> {
  const paths = sandboxPaths(input.workDir);
  const base = await readBaseFacts(paths.gitDir, input.baseCommit, input.factsDir, call);
  if (base.excludes === '' || input.pathspecs?.length === 0) return { removed: [], kept: [] };
  const listed = input.pathspecs
    ? null
    : input.listInProcess?.({
        workDir: input.workDir,
        uhIndex: paths.index,
        baseCommit: input.baseCommit,
        ignoreRules: base.excludes,
      });
  const listing = listed ? listed.join('\0') : await listWithGit(input, base.excludes, call);
  return removeListed(input, listing);
}

/** `ls-files --others --ignored` under the base's rules, over uh's git dir and index (NUL-separated). */
async function listWithGit(input: StripInput, excludes: string, call: GitCallOptions): Promise<string> {
  const paths = sandboxPaths(input.workDir);
  const scratch = join(input.scratchDir, 'ignored-excludes');
  let rules = input.factsDir ? keptExcludesFile(input.factsDir, input.baseCommit, excludes) : null;
  if (rules === null) writeFileSync((rules = scratch), excludes);
  try {
    const args = ['ls-files', '-z', '--others', '--ignored', `--exclude-from=${rules}`];
    if (input.pathspecs) args.push('--', ...input.pathspecs);
    const env = { GIT_INDEX_FILE: paths.index, GIT_LITERAL_PATHSPECS: '1' };
    const at = { ...call, cwd: input.workDir, gitDir: paths.gitDir, workTree: input.workDir, env };
    return (await git(args, at)).stdout;
  } finally {
    rmSync(scratch, { force: true });
  }
}

function removeListed(input: StripInput, listing: string): Stripped {
  const keep = input.keep.length > 0 ? picomatch([...input.keep], { dot: true }) : () => false;
  const flagged = (path: string) => input.excluded.some((e) => path === e || path.startsWith(`${e}/`));
  const out: Stripped = { removed: [], kept: [] };
  // A trailing slash is a nested repository: flagged by the tree walk, never removed here.
  for (const path of listing.split('\0').filter((p) => p !== '' && !p.endsWith('/') && !flagged(p))) {
    if (keep(path)) out.kept.push(path);
    else if (removeIgnored(input.workDir, path)) out.removed.push(path);
  }
  out.kept.sort();
  out.removed.sort();
  return out;
}

/**
 * Remove the empty directories the tree walk found (`walkTree`), and each parent that is left
 * empty, never the top: git records no directory, so the checks must not see one the diff cannot
 * show (an empty directory is an importable Python namespace package). Returns those removed.
 */
export function removeEmptyDirs(workDir: string, emptyDirs: readonly string[]): string[] {
  const removed: string[] = [];
  for (const dir of emptyDirs) {
    const parts = dir.split('/');
    for (let n = parts.length; n >= 1; n--) {
      const rel = parts.slice(0, n).join('/');
      try {
        if (lstatSync(join(workDir, rel)).isSymbolicLink()) break;
        rmdirSync(join(workDir, rel));
        removed.push(rel);
      } catch {
        break; // not empty (or gone): its parents are not emptied by this one
      }
    }
  }
  return removed;
}

/** Unlink one listed file (never through a symlinked directory), then the directories it leaves empty. */
function removeIgnored(workDir: string, path: string): boolean {
  const parts = path.split('/');
  for (let n = 1; n < parts.length; n++) {
    if (lstatSync(join(workDir, ...parts.slice(0, n)), { throwIfNoEntry: false })?.isDirectory() !== true) return false;
  }
  const st = lstatSync(join(workDir, path), { throwIfNoEntry: false });
  if (st === undefined || st.isDirectory()) return false;
  unlinkSync(join(workDir, path));
  for (let n = parts.length - 1; n >= 1; n--) {
    try {
      rmdirSync(join(workDir, ...parts.slice(0, n)));
    } catch {
      break; // not empty: neither are its parents
    }
  }
  return true;
}

/**
 * The diff's listing with the kept ignored files added (they are new: `onlyAdded` stands) and every
 * flagged path (and anything under it) left out: git would refuse or skip it, and the violation
 * already names it. Pure.
 */
export function adjustListing<T extends { paths: string[] }>(
  listed: T,
  kept: readonly string[],
  excluded: readonly string[],
): T {
  if (kept.length === 0 && excluded.length === 0) return listed;
  const flagged = (path: string) => excluded.some((e) => path === e || path.startsWith(`${e}/`));
  const paths = [...new Set([...listed.paths, ...kept])].filter((p) => !flagged(p));
  return { ...listed, paths };
}
