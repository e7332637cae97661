/**
 * uh's diff helper inside an overlay sandbox's mount namespace (`overlay-diff.ts` starts it under
 * `overlayLaunchArgv`): the same `captureDiff` as for a worktree sandbox, over the merged tree,
 * listing only what the upper layer names (`changedPathspecs`). Reads one request (JSON) on stdin,
 * prints one result (JSON) on stdout. A request `{tree, views}` runs the whole tree step
 * (`tree-work.ts`: measure, `.git` restore, walk, ignored files, diff) instead of the diff alone;
 * exit 1 with the error's message on stderr. Reads no environment: everything comes in the
 * request. Started ahead of its request (`startOverlayHelper`, while the agent runs), it waits for
 * it with its modules loaded, and the request's `mount` (`overlayMountArgv`) mounts the overlay in
 * the helper's own mount namespace first; stdin closed with no request is a quiet exit.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
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
  /** The argv that mounts the overlay in this namespace first (a helper started ahead of it). */
  mount: z.array(z.string()).min(1).optional(),
});

/** Run the request's mount; throws with the mount's own words when it fails. */
function mountFirst(argv: string[]): void {
  const done = spawnSync(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (done.status === 0) return;
  const why = done.error?.message ?? done.stderr.trim().slice(-500);
  throw new Error(`the overlay mount failed (exit ${done.status ?? done.signal}): ${why}`);
}

/** The helper's one request and answer; never rejects (a failure is exit 1 with its message). */
export async function main(): Promise<void> {
  try {
    await answer();
  } catch (error: unknown) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}

async function answer(): Promise<void> {
  const text = readFileSync(0, 'utf8');
  if (text === '') return; // started ahead, then not needed
  const input: unknown = JSON.parse(text);
  if (typeof input === 'object' && input !== null && 'tree' in input) {
    const { tree, views, mount } = TreeRequestSchema.parse(input);
    if (mount) mountFirst(mount);
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

// Run as a file (dist/src, no bundle); the bundle's loader, bin/overlay-helper.js, calls `main`.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
