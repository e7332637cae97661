/**
 * What a worktree holds: its bytes (apparent sizes, so a sparse file counts at its length, as git
 * would read it) and its entries (files, links, directories), the top-level `.git` excepted. The
 * walk stops as soon as either bound is passed: measuring a hostile tree costs at most the bounds.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface WorktreeUsage {
  bytes: number;
  files: number;
  /** The bound passed first, or null when the tree is within both. */
  over: 'worktree_bytes' | 'worktree_files' | null;
}

/**
 * What `worktreeUsage` may take without walking: the entries and bytes below the directory `rel`
 * (relative to the root), when something else already knows them (an overlay sandbox's directory
 * the mission never wrote in is the base's: overlay-tree-facts.ts); null: walk it.
 */
export type UsageShortcut = (rel: string) => { bytes: number; files: number } | null;

export function worktreeUsage(
  root: string,
  bounds: { bytes: number; files: number },
  shortcut: UsageShortcut = () => null,
): WorktreeUsage {
  const usage: WorktreeUsage = { bytes: 0, files: 0, over: null };
  const stack: Array<[string, string]> = [[root, '']];
  while (stack.length > 0 && usage.over === null) {
    const [dir, rel] = stack.pop() as [string, string];
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // gone meanwhile, or a name too long to open: the diff's path bounds report it
    }
    for (const entry of entries) {
      if (dir === root && entry.name === '.git') continue;
      const path = join(dir, entry.name);
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      usage.files += 1;
      if (entry.isDirectory()) {
        const known = shortcut(child);
        if (known === null) stack.push([path, child]);
        else {
          usage.files += known.files;
          usage.bytes += known.bytes;
        }
      } else if (entry.isFile()) usage.bytes += sizeOf(path);
      if (usage.files > bounds.files) usage.over = 'worktree_files';
      else if (usage.bytes > bounds.bytes) usage.over = 'worktree_bytes';
      if (usage.over !== null) break;
    }
  }
  return usage;
}

function sizeOf(path: string): number {
  try {
    return lstatSync(path).size;
  } catch {
    return 0;
  }
}
