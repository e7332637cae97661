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

export function worktreeUsage(root: string, bounds: { bytes: number; files: number }): WorktreeUsage {
  const usage: WorktreeUsage = { bytes: 0, files: 0, over: null };
  const stack = [root];
  while (stack.length > 0 && usage.over === null) {
    const dir = stack.pop() as string;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // gone meanwhile, or a name too long to open: the diff's path bounds report it
    }
    for (const entry of entries) {
      if (dir === root && entry.name === '.git') continue;
      const path = join(dir, entry.name);
      usage.files += 1;
      if (entry.isDirectory()) stack.push(path);
      else if (entry.isFile()) usage.bytes += sizeOf(path);
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
