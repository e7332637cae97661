/**
 * Copy-on-write sandboxes (docs/sandboxes.md): the worktree is an overlay of the shared base
 * checkout of its commit (`overlay-base.ts`, the lower layer) and an upper layer of its own, mounted
 * only inside the namespaces of the processes that use it (`overlay-mount.ts`). Layout, beside the
 * worktree backend's (`worktree.ts`):
 *
 *   <cache>/sandboxes/<name>/             the mount point (empty on the host)
 *   <cache>/sandboxes/.uh/<name>/git/     uh's private bare git dir, as for a worktree sandbox
 *   <cache>/sandboxes/.uh/<name>/index    uh's index: a hard link to the base's (uh only reads it;
 *                                         git replaces an index by renaming, never writes it in place)
 *   <cache>/sandboxes/.uh/<name>/upper/   the mission's writes; holds `.git/`, the agent's git
 *                                         dir, from the start (the base has none)
 *   <cache>/sandboxes/.uh/<name>/work/    the overlay's scratch dir
 *
 * Making one costs the same for 1 file or 50,000: a lease on the base (a checkout only the first
 * time at that commit), two small git dirs, a link to the base's index and one copy of it (the
 * agent's: a file in its upper layer, which it may write in place). Removing one deletes its
 * private dir (the upper layer) and drops the lease.
 */
import { copyFileSync, linkSync, realpathSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { makeDir } from '../../shared/fs/make-dir.js';
import { writeGitDir } from './git-dir.js';
import type { GitCallOptions } from './git.js';
import type { Mirror } from './mirror-cache.js';
import { acquireBase, releaseBase, type OverlayBase } from './overlay-base.js';
import { unlockWorkDir, type OverlayLayers } from './overlay-mount.js';
import {
  activeRecord,
  fileStamp,
  gitDirSpec,
  removeSandbox,
  newSandboxSlot,
  sandboxPaths,
  writeRecord,
  type Sandbox,
} from './worktree.js';

/** An overlay sandbox: a `Sandbox` whose worktree is a mount point, and its layers. */
export interface OverlaySandbox extends Sandbox {
  backend: 'overlay';
  layers: OverlayLayers;
  /** The `unshare` every process of the sandbox starts under (`overlay-mount.ts`). */
  unshare: string;
  base: Pick<OverlayBase, 'name' | 'tree' | 'index' | 'fresh'>;
}

/** The layers of the sandbox at `path` over `baseTree`. Pure. */
export function overlayLayers(path: string, baseTree: string): OverlayLayers {
  const { privateDir } = sandboxPaths(path);
  return { lower: baseTree, upper: join(privateDir, 'upper'), work: join(privateDir, 'work'), mountPoint: path };
}

/** uh's index copied with its mtime (entries as new as it stay "racy": compared by content). */
function copyIndex(from: string, to: string): void {
  copyFileSync(from, to);
  const st = statSync(from);
  utimesSync(to, st.atime, st.mtime);
}

/**
 * A new overlay sandbox at `commit` for `operationId` (see the module comment). The record names
 * the base it leases (`removeOverlaySandbox` drops the lease).
 */
export async function createOverlaySandbox(
  cacheDir: string,
  mirror: Mirror,
  commit: string,
  operationId: string,
  now: Date,
  call: GitCallOptions = {},
  unshare = 'unshare',
): Promise<OverlaySandbox> {
  const { name, paths } = newSandboxSlot(cacheDir, operationId);
  const base = await acquireBase(cacheDir, mirror, commit, name, undefined, call);
  const layers = overlayLayers(paths.path, realpathSync(base.tree));
  makeDir(paths.path);
  makeDir(layers.work);
  const made = { name, path: paths.path, mirror, commit, dirMode: base.dirMode };
  writeRecord(cacheDir, { ...activeRecord(made, operationId, now), backend: 'overlay', base: base.name });
  writeGitDir(paths.gitDir, gitDirSpec(mirror, commit, true));
  // A link, not a copy: 50,000 entries are ~4 MB a sandbox. uh reads this index and never writes it;
  // git writes an index through index.lock and a rename, which replaces the link and leaves the base's.
  linkSync(base.index, paths.index);
  const agentGitDir = join(layers.upper, '.git');
  writeGitDir(agentGitDir, gitDirSpec(mirror, commit, false));
  copyIndex(base.index, join(agentGitDir, 'index'));
  return {
    name,
    path: paths.path,
    mirror,
    commit,
    warm: false,
    dirMode: base.dirMode,
    indexStamp: fileStamp(paths.index),
    backend: 'overlay',
    layers,
    unshare,
    base: { name: base.name, tree: base.tree, index: base.index, fresh: base.fresh },
  };
}

export function isOverlaySandbox(sandbox: Sandbox): sandbox is OverlaySandbox {
  return sandbox.backend === 'overlay' && 'layers' in sandbox;
}

/** Remove the sandbox (its upper layer with uh's private dir, the mount point) and drop its lease on the base. */
export async function removeOverlaySandbox(
  cacheDir: string,
  record: { name: string; path: string; mirror: string; base?: string | undefined },
): Promise<void> {
  unlockWorkDir(overlayLayers(record.path, '').work);
  await removeSandbox(cacheDir, record);
  if (record.base) await releaseBase(cacheDir, record.base, record.name);
}
