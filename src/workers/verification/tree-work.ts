/**
 * What uh does to the sandbox's tree between the agent and the checks, in order, as one step with
 * plain data in and out, so it runs the same in uh's process (a worktree sandbox) and in the
 * overlay helper inside an overlay sandbox's mount namespace (`overlay-diff-main.ts`, where the
 * merged tree exists):
 *
 *   1. the worktree's size and entry count against the mission's bounds (over: nothing else);
 *   2. the agent's `.git` put back as uh made it (`git-link.ts`);
 *   3. the tree walk: names git refuses, paths past the bounds, nested `.git`, empty dirs;
 *   4. the agent's ignored files removed (or kept, by `sandbox.keep_ignored`), empty dirs removed;
 *   5. the diff against the base commit (`capture-diff.ts`); `pathspecs` limits its listing (the
 *      overlay helper passes what the upper layer names).
 */
import { z } from 'zod';
import { restoreGitLink } from '../sandbox/git-link.js';
import { worktreeUsage, type UsageShortcut, type WorktreeUsage } from '../sandbox/worktree-usage.js';
import { gitPathOf } from '../git-path.js';
import { captureDiff, type DiffCapture } from './capture-diff.js';
import { removeEmptyDirs, stripIgnored, type Stripped } from './strip-ignored.js';
import { walkTree, type WalkShortcut } from './tree-violations.js';
import type { ScopeViolation } from './scope-check.js';

export const TreeWorkRequestSchema = z.strictObject({
  workDir: z.string(),
  mirrorPath: z.string(),
  baseCommit: z.string(),
  patchPath: z.string(),
  scratchDir: z.string(),
  factsDir: z.string().nullable(),
  gitFastPath: z.boolean(),
  capBytes: z.number().int().positive(),
  keep: z.array(z.string()),
  pathBounds: z.strictObject({ maxBytes: z.number().int(), maxDepth: z.number().int() }),
  worktreeBounds: z.strictObject({ bytes: z.number(), files: z.number() }),
});
export type TreeWorkRequest = z.infer<typeof TreeWorkRequestSchema>;

export interface TreeWorkResult {
  usage: WorktreeUsage;
  /** What was at `.git` when uh put its own back (`restoreGitLink`), or null. */
  replaced: string | null;
  /** The tree walk's violations by name. */
  walked: ScopeViolation[];
  ignored: Stripped;
  /** Null when the tree was over its bounds (nothing after the measure ran). */
  diff: DiffCapture | null;
}

export interface TreeWorkCall {
  signal?: AbortSignal;
  /**
   * Only these paths can differ from the base (the overlay's upper layer, asked again after the
   * ignored files are gone); absent or null: any of them.
   */
  pathspecs?: () => string[] | null;
  /** Directories the walks may take as known (an overlay's untouched base directories). */
  shortcuts?: { usage: UsageShortcut; walk: WalkShortcut };
}

export async function treeWork(request: TreeWorkRequest, call: TreeWorkCall = {}): Promise<TreeWorkResult> {
  const { workDir, baseCommit, scratchDir, factsDir } = request;
  const none: Stripped = { removed: [], kept: [] };
  const usage = worktreeUsage(workDir, request.worktreeBounds, call.shortcuts?.usage);
  if (usage.over !== null) return { usage, replaced: null, walked: [], ignored: none, diff: null };
  const replaced = restoreGitLink({ path: workDir, mirror: { path: request.mirrorPath }, commit: baseCommit });
  const { violations: walked, emptyDirs } = walkTree(workDir, request.pathBounds, call.shortcuts?.walk);
  const excluded = walked.map((v) => v.path);
  const git = gitPathOf(request);
  const signal = call.signal ? { signal: call.signal } : {};
  // The checks run on exactly the diff's tree: the agent's ignored files go (unless kept, then staged).
  const candidates = call.pathspecs?.() ?? null;
  const strip = { workDir, baseCommit, scratchDir, factsDir, keep: request.keep, excluded };
  const ignored = await stripIgnored(
    { ...strip, listInProcess: git.listIgnored, ...(candidates ? { pathspecs: candidates } : {}) },
    signal,
  );
  removeEmptyDirs(workDir, emptyDirs);
  const pathspecs = candidates === null ? undefined : (call.pathspecs?.() ?? undefined);
  const diff = await captureDiff(workDir, baseCommit, request.patchPath, scratchDir, {
    git,
    keptIgnored: ignored.kept,
    excluded,
    capBytes: request.capBytes,
    ...(factsDir ? { baseFactsDir: factsDir } : {}),
    ...(pathspecs ? { pathspecs } : {}),
    ...signal,
  });
  return { usage, replaced, walked, ignored, diff };
}
