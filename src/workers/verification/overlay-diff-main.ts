/**
 * uh's diff helper inside an overlay sandbox's mount namespace (`overlay-diff.ts` starts it under
 * `overlayLaunchArgv`): the same `captureDiff` as for a worktree sandbox, over the merged tree,
 * listing only what the upper layer names (`changedPathspecs`). Reads one request (JSON) on stdin,
 * prints one result (JSON) on stdout. A request `{tree, views}` runs the whole tree step
 * (`tree-work.ts`: measure, `.git` restore, walk, ignored files, diff) instead of the diff alone; exit 1 with the error's message on stderr. Reads no
 * environment: everything comes in the request.
 */
import { readFileSync } from 'node:fs';
import { changedPathspecs } from '../sandbox/overlay-changes.js';
import { overlayShortcuts } from '../sandbox/overlay-tree-facts.js';
import { gitPathOf } from '../git-path.js';
import { captureDiff } from './capture-diff.js';
import { OverlayDiffRequestSchema } from './overlay-diff.js';
import { TreeWorkRequestSchema, treeWork } from './tree-work.js';
import { z } from 'zod';

const TreeRequestSchema = z.strictObject({
  tree: TreeWorkRequestSchema,
  views: OverlayDiffRequestSchema.shape.views,
});

async function main(): Promise<void> {
  const input: unknown = JSON.parse(readFileSync(0, 'utf8'));
  if (typeof input === 'object' && input !== null && 'tree' in input) {
    const { tree, views } = TreeRequestSchema.parse(input);
    const shortcuts = overlayShortcuts(views.upper, views.lower, tree.pathBounds);
    const result = await treeWork(tree, { pathspecs: () => changedPathspecs(views), shortcuts });
    process.stdout.write(JSON.stringify(result));
    return;
  }
  const request = OverlayDiffRequestSchema.parse(input);
  const pathspecs = changedPathspecs(request.views) ?? undefined;
  const result = await captureDiff(request.workDir, request.baseCommit, request.patchPath, request.scratchDir, {
    git: gitPathOf(request),
    capBytes: request.capBytes,
    keptIgnored: request.keptIgnored,
    excluded: request.excluded,
    ...(request.baseFactsDir ? { baseFactsDir: request.baseFactsDir } : {}),
    ...(request.timeoutMs ? { timeoutMs: request.timeoutMs } : {}),
    ...(pathspecs ? { pathspecs } : {}),
  });
  process.stdout.write(JSON.stringify({ ...result, listed: pathspecs?.length ?? null }));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
