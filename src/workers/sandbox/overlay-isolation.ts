/**
 * bwrap inside an overlay sandbox's namespace (`overlay-mount.ts`): the argv that mounts the
 * overlay, then runs the phase's bwrap over the merged tree. Inside the launcher's user namespace
 * uh's process is uid 0 with every capability of that namespace, whatever its uid on the host;
 * bwrap must therefore always make its own user namespace (`sandboxIds`) and drop every
 * capability, or the child could unmount the overlay (and see the
 * empty mount point) or mount over the sandbox. The cache dir stays masked as for a worktree
 * sandbox: the upper layer and the base are reachable only through the overlay.
 */
import { bwrapArgv, type BwrapPlan } from '../../shared/process/bwrap-argv.js';
import { overlayLaunchArgv, type OverlayLayers } from './overlay-mount.js';
import { ROOT_SANDBOX_ID } from '../../shared/process/bwrap-probe.js';

/**
 * The ids the child runs as: uh's own (as a worktree sandbox's child does: bwrap maps uh's uid
 * to itself), or `nobody` when uh is root (as for a worktree sandbox on a root host). Inside the
 * launcher's namespace uh is 0, so either id maps to uh's on the host: what the agent writes is
 * uh's, as before. Pure.
 */
export function sandboxIds(ids: { uid: number; gid: number }): { uid: number; gid: number } {
  return ids.uid === 0 ? { uid: ROOT_SANDBOX_ID, gid: ROOT_SANDBOX_ID } : ids;
}

/** The argv of one isolated process of an overlay sandbox: launcher, then bwrap as root's plan. Pure. */
export function overlayBwrapArgv(
  unshare: string,
  layers: OverlayLayers,
  plan: BwrapPlan,
  argv: readonly string[],
  ids: { uid: number; gid: number } = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 },
): string[] {
  return overlayLaunchArgv(unshare, layers, bwrapArgv({ ...plan, userNs: sandboxIds(ids) }, argv));
}
