import { basename, dirname, join } from 'node:path';
import { createSandbox } from '../../src/workers/sandbox/worktree.js';
import { resolveInMirror } from '../../src/workers/sandbox/mirror-cache.js';
import { makeRepo } from './git-repo.js';
import { tempDir } from './temp.js';

/**
 * A fresh sandbox of a new repository holding `files`, with its cache dir, a scratch dir and the
 * base-facts dir the diff keeps; every dir made is pushed to `dirs` for the test to remove.
 */
export async function freshSandbox(
  files: Record<string, string>,
  operationId: string,
  dirs: string[],
  prefix = 'uh-sandbox-',
) {
  const repo = makeRepo(files);
  const cacheDir = tempDir(prefix);
  const scratch = tempDir(`${prefix}scratch-`);
  dirs.push(repo, cacheDir, scratch);
  const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD');
  const sandbox = await createSandbox(cacheDir, mirror, commit, operationId, new Date());
  return {
    sandbox,
    commit,
    cacheDir,
    scratch,
    baseFactsDir: join(cacheDir, 'derived', 'base-facts'),
    patch: join(scratch, 'diff.patch'),
  };
}

/**
 * Where a sandbox's file `rel` is on the host while the sandbox lives or is kept: in its worktree,
 * or for an overlay sandbox (`receipt.sandbox.backend`), whose mount point is empty on the host,
 * in its upper layer (what the mission wrote; docs/sandboxes.md).
 */
export function sandboxFile(sandbox: { path: string; backend?: string }, rel: string): string {
  if (sandbox.backend !== 'overlay') return join(sandbox.path, rel);
  return join(dirname(sandbox.path), '.uh', basename(sandbox.path), 'upper', rel);
}
