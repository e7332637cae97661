/**
 * Where an overlay sandbox can differ from its base, read from its upper layer: the pathspecs the
 * diff lists (`captureDiff`'s `pathspecs`), in time linear in what the upper layer holds. Runs
 * where the merged tree is mounted (inside the sandbox's mount namespace), and compares three
 * views of each directory the upper layer holds:
 *
 *   upper   what the mission wrote: files and links (written or copied up), whiteouts (character
 *           devices 0/0: a deletion), directories (new, copied up, or opaque: made anew where the
 *           base had one);
 *   lower   the base checkout;
 *   merged  what the mission sees: a base entry missing here was deleted, by a whiteout or
 *           because its directory is opaque (its xattr is not needed: the merged view tells).
 *
 * A path is named when the upper layer holds it as anything but a directory that is a directory
 * in both other views too (then the walk goes inside), or when the base holds it and the merged
 * view does not. A named directory stands for everything below it (git's literal pathspecs).
 * Renames are a deletion and an addition: `redirect_dir` is off (`overlay-mount.ts`). The
 * top-level `.git` (the agent's git dir, never in the diff) is not named.
 */
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { byCodeUnit } from '../../shared/compare.js';

/** The three roots of one overlay sandbox. */
export interface OverlayViews {
  upper: string;
  lower: string;
  merged: string;
}

/** Past this many bytes of pathspecs, `changedPathspecs` gives up (null): the whole tree is listed. */
export const MAX_PATHSPEC_BYTES = 256 * 1024;

function names(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

const isDir = (st: Stats | null) => st !== null && st.isDirectory();

/**
 * The pathspecs of every place the merged tree can differ from the base, sorted; [] when the
 * upper layer holds nothing but the agent's `.git`; null past `maxBytes` (list everything).
 */
export function changedPathspecs(views: OverlayViews, maxBytes = MAX_PATHSPEC_BYTES): string[] | null {
  const out: string[] = [];
  let bytes = 0;
  const name = (rel: string): boolean => {
    out.push(rel);
    bytes += Buffer.byteLength(rel) + 1;
    return bytes <= maxBytes;
  };
  const walk = (rel: string): boolean => {
    const at = (root: string) => (rel === '' ? root : join(root, rel));
    const upper = names(at(views.upper));
    const merged = new Set(names(at(views.merged)));
    const inUpper = new Set(upper);
    for (const entry of upper.sort(byCodeUnit)) {
      if (rel === '' && entry === '.git') continue;
      const path = rel === '' ? entry : `${rel}/${entry}`;
      const both =
        isDir(lstatOrNull(join(views.upper, path))) &&
        isDir(lstatOrNull(join(views.lower, path))) &&
        merged.has(entry) &&
        isDir(lstatOrNull(join(views.merged, path)));
      if (!(both ? walk(path) : name(path))) return false;
    }
    for (const entry of names(at(views.lower)).sort(byCodeUnit)) {
      if (inUpper.has(entry) || merged.has(entry)) continue;
      if (!name(rel === '' ? entry : `${rel}/${entry}`)) return false;
    }
    return true;
  };
  return walk('') ? out.sort(byCodeUnit) : null;
}
