/**
 * What the tree step (`verification/tree-work.ts`) would find in each directory of a base
 * checkout, so that for an overlay sandbox it walks only the directories the mission wrote in.
 * A directory of the merged tree that is not a directory of the upper layer holds exactly the
 * base's entries (overlayfs shows the lower directory as it is), so its entries and bytes below
 * it (`worktreeUsage`) and its violations and empty directories (`walkTree`) are the base's,
 * found once per base by the same walks and kept beside it in `tree-facts.json` (keyed by the
 * path bounds they were found under). The result is the same as walking the merged tree:
 * test/workers/verification/overlay-diff.test.ts runs the whole tree step on both backends over
 * generated changes and compares them.
 */
import { lstatSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { ScopeViolationSchema } from '../../shared/contracts/receipt.js';
import type { PathBounds } from '../../shared/path-bounds.js';
import { walkTree, type TreeWalk, type WalkShortcut } from '../verification/tree-violations.js';
import type { UsageShortcut } from './worktree-usage.js';

const FactsSchema = z.object({
  bounds: z.object({ maxBytes: z.number(), maxDepth: z.number() }),
  /** Per directory (relative path): the entries and bytes below it. */
  dirs: z.record(z.string(), z.tuple([z.number(), z.number()])),
  violations: z.array(ScopeViolationSchema),
  emptyDirs: z.array(z.string()),
});
type Facts = z.infer<typeof FactsSchema>;

/** Entries and bytes below every directory of `root` (post-order, `lstat` sizes of regular files). */
function dirTotals(root: string): Facts['dirs'] {
  const dirs: Facts['dirs'] = {};
  const visit = (dir: string, rel: string): [number, number] => {
    let files = 0;
    let bytes = 0;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      files += 1;
      if (entry.isDirectory()) {
        const [f, b] = visit(join(dir, entry.name), child);
        files += f;
        bytes += b;
      } else if (entry.isFile()) bytes += lstatSync(join(dir, entry.name)).size;
    }
    if (rel !== '') dirs[rel] = [files, bytes];
    return [files, bytes];
  };
  visit(root, '');
  return dirs;
}

function factsFile(baseTree: string): string {
  return join(dirname(baseTree), 'tree-facts.json');
}

/** The base's facts under `bounds`: read, or found now and kept (written whole, then renamed). */
export function baseTreeFacts(baseTree: string, bounds: PathBounds): Facts {
  try {
    const kept = FactsSchema.parse(JSON.parse(readFileSync(factsFile(baseTree), 'utf8')));
    if (kept.bounds.maxBytes === bounds.maxBytes && kept.bounds.maxDepth === bounds.maxDepth) return kept;
  } catch {
    // none yet, or unreadable: found again below
  }
  const walked = walkTree(baseTree, bounds);
  const facts: Facts = { bounds: { ...bounds }, dirs: dirTotals(baseTree), ...walked };
  const tmp = `${factsFile(baseTree)}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(facts));
  renameSync(tmp, factsFile(baseTree));
  return facts;
}

function upperHasDir(upper: string, rel: string): boolean {
  try {
    return lstatSync(join(upper, rel)).isDirectory();
  } catch {
    return false;
  }
}

/** The shortcuts of `worktreeUsage` and `walkTree` for an overlay sandbox of `upper` over the base. */
export function overlayShortcuts(
  upper: string,
  baseTree: string,
  bounds: PathBounds,
): { usage: UsageShortcut; walk: WalkShortcut } {
  const facts = baseTreeFacts(baseTree, bounds);
  const untouched = (rel: string) => !upperHasDir(upper, rel) && facts.dirs[rel] !== undefined;
  const under = (rel: string) => (path: string) => path === rel || path.startsWith(`${rel}/`);
  return {
    usage: (rel) => {
      const known = untouched(rel) ? facts.dirs[rel] : undefined;
      return known ? { files: known[0], bytes: known[1] } : null;
    },
    walk: (rel): TreeWalk | null => {
      if (!untouched(rel)) return null;
      const violations = facts.violations.filter((v) => under(rel)(v.path));
      return { violations, emptyDirs: facts.emptyDirs.filter(under(rel)) };
    },
  };
}
