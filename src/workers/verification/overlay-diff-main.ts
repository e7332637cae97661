/**
 * uh's diff helper inside an overlay sandbox's mount namespace (`overlay-diff.ts` starts it under
 * `overlayLaunchArgv`): the same `captureDiff` as for a worktree sandbox, over the merged tree,
 * listing only what the upper layer names (`changedPathspecs`). Reads one request (JSON) on stdin,
 * prints one result (JSON) on stdout; exit 1 with the error's message on stderr. Reads no
 * environment: everything comes in the request.
 */
import { readFileSync } from 'node:fs';
import { changedPathspecs } from '../sandbox/overlay-changes.js';
import { GIT_PROCESSES, IN_PROCESS_GIT } from '../git-path.js';
import { captureDiff } from './capture-diff.js';
import { OverlayDiffRequestSchema } from './overlay-diff.js';

async function main(): Promise<void> {
  const request = OverlayDiffRequestSchema.parse(JSON.parse(readFileSync(0, 'utf8')));
  const pathspecs = changedPathspecs(request.views) ?? undefined;
  const result = await captureDiff(request.workDir, request.baseCommit, request.patchPath, request.scratchDir, {
    git: request.gitFastPath ? IN_PROCESS_GIT : GIT_PROCESSES,
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
