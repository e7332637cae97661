/**
 * bwrap inside an overlay sandbox's namespace (`overlay-mount.ts`): the argv that mounts the
 * overlay, then runs the phase's bwrap over the merged tree. Inside the launcher's user namespace
 * uh's process is uid 0 with every capability of that namespace, whatever its uid on the host;
 * bwrap must therefore always make its own user namespace with the unprivileged uid and drop
 * every capability (`userNamespaceArgs(0)`), or the child could unmount the overlay (and see the
 * empty mount point) or mount over the sandbox. The cache dir stays masked as for a worktree
 * sandbox: the upper layer and the base are reachable only through the overlay.
 */
import { bwrapArgv, type BwrapPlan } from '../../shared/process/bwrap-argv.js';
import { overlayLaunchArgv, type OverlayLayers } from './overlay-mount.js';

/** The argv of one isolated process of an overlay sandbox: launcher, then bwrap as root's plan. Pure. */
export function overlayBwrapArgv(
  unshare: string,
  layers: OverlayLayers,
  plan: BwrapPlan,
  argv: readonly string[],
): string[] {
  return overlayLaunchArgv(unshare, layers, bwrapArgv({ ...plan, uid: 0 }, argv));
}
