/**
 * Diff capture against the base commit: tracked and untracked files (ignored ones excepted),
 * including anything the runtime committed. Uses a scratch copy of the worktree's index so
 * the sandbox's own index is untouched and unchanged files are not re-hashed. The patch
 * streams to disk; only the name list is held in memory.
 */
import { copyFileSync, existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { ChangedFile } from '../../shared/contracts/receipt.js';
import { spawnGroup } from '../../shared/process/spawn-group.js';
import { UhError } from '../../shared/errors.js';
import { git, gitEnv, GIT_TIMEOUTS_MS, type GitCallOptions } from '../sandbox/git.js';
import { parseNameStatusZ } from './parse-name-status.js';

export interface DiffCapture {
  changed: ChangedFile[];
  patchPath: string;
  bytes: number;
  digest: string;
  headCommit: string | null;
  /** The tree of the sandbox's final state (what the patch applied to the base commit yields). */
  tree: string | null;
}

/** `call` bounds the git calls (timeout, abort signal). */
export async function captureDiff(workDir: string, baseCommit: string, patchPath: string, scratchDir: string, call: GitCallOptions = {}): Promise<DiffCapture> {
  const index = join(scratchDir, 'diff.index');
  // One git call for all three: where the worktree's index lives, the commit it is on now, the base tree.
  const { stdout: revParse } = await git(['rev-parse', '--path-format=absolute', '--git-path', 'index', 'HEAD', `${baseCommit}^{tree}`], { ...call, cwd: workDir, okCodes: [128] });
  const [indexPath = '', head = '', baseTree = ''] = revParse.trim().split('\n');
  if (existsSync(indexPath)) copyFileSync(indexPath, index);
  const env = { GIT_INDEX_FILE: index };
  try {
    await git(['add', '-A', '--', '.'], { ...call, cwd: workDir, env });
    // The final tree is what a promotion must reproduce; if git cannot write it, promotion checks the diff digest only.
    const tree = (await git(['write-tree'], { cwd: workDir, env, okCodes: [1, 128] })).stdout.trim();
    const headCommit = /^[0-9a-f]{40,64}$/.test(head) ? head : null;
    // Nothing changed (the tree is the base's): an empty patch, no diff to run.
    if (/^[0-9a-f]{40,64}$/.test(tree) && tree === baseTree) {
      writeFileSync(patchPath, '');
      return { changed: [], patchPath, bytes: 0, digest: await fileDigest(patchPath), headCommit, tree };
    }
    const names = await git(['diff', '--cached', '--name-status', '-z', '-M', baseCommit], { ...call, cwd: workDir, env });
    const child = spawnGroup({
      argv: ['git', 'diff', '--cached', '--binary', '-M', baseCommit],
      cwd: workDir,
      env: gitEnv(env),
      stdout: { file: patchPath },
      stderr: 'ignore',
      timeoutMs: call.timeoutMs ?? GIT_TIMEOUTS_MS.diff,
      ...(call.signal ? { signal: call.signal } : {}),
    });
    const exit = await child.result;
    if (exit.timedOut || exit.aborted) throw new UhError('sandbox', `git diff ${exit.timedOut ? 'timed out' : 'was aborted'} in ${workDir}`, { hint: 'the diff of a very large change can be slow: run again' });
    if (exit.exitCode !== 0) throw new UhError('sandbox', `git diff exited ${exit.exitCode}`);
    return {
      changed: parseNameStatusZ(names.stdout),
      patchPath,
      bytes: statSync(patchPath).size,
      digest: await fileDigest(patchPath),
      headCommit,
      tree: /^[0-9a-f]{40,64}$/.test(tree) ? tree : null,
    };
  } finally {
    rmSync(index, { force: true });
  }
}

export async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}
