/**
 * The overlay mount of a copy-on-write sandbox (docs/sandboxes.md). The merged tree exists only
 * inside a mount namespace: every process that must see it starts under `overlayLaunchArgv`,
 *
 *   unshare --user --map-root-user --mount -- sh -c '<mount the overlay>; exec "$@"' …
 *
 * which makes a user namespace (uh's uid mapped to 0, root or not: the kernel allows an overlay
 * mount there since 5.11 with `userxattr`), a mount namespace owned by it, mounts
 * `lowerdir=<base>,upperdir=<upper>,workdir=<work>` on the sandbox path (on the host an empty
 * directory) and then runs the command: bwrap (which makes its own user namespace inside, with
 * its unprivileged uid and no capabilities: it cannot unmount the overlay) or uh's own diff
 * helper. The mount goes when the last process of the namespace ends; nothing is left on the host.
 *
 * Options, fixed: `userxattr` (the overlay's xattrs in `user.overlay.*`: opaque directories are
 * marked `user.overlay.opaque=y`; whiteouts are character devices 0/0, root or not, checked by
 * the probe), `redirect_dir=nofollow` (the only value `userxattr` takes: renaming a directory of
 * the base gives EXDEV and `mv` copies it, so a rename is a delete plus an add in the upper
 * layer), `metacopy=off` (a copied-up file holds its whole content), `index=off`, `xino=off`.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { makeDir } from '../../shared/fs/make-dir.js';
import { removeTree } from '../../shared/fs/deep-tree.js';
import { whichOnPath } from '../../shared/process/bwrap-probe.js';

/** The three directories of one overlay, and where the merged tree is mounted. */
export interface OverlayLayers {
  /** The shared, read-only base checkout. */
  lower: string;
  /**
   * A read-only layer between the upper layer and the base: a kept sandbox's upper layer, shown
   * to `uh sandbox enter` over a scratch upper layer of its own (kept-sandboxes.ts). Unset in a mission.
   */
  over?: string;
  /** The mission's writes (uh's private dir, never bound into the sandbox). */
  upper: string;
  /** The overlay's scratch dir: same filesystem as `upper`. */
  work: string;
  /** The sandbox path: an empty directory on the host, the merged tree inside the namespace. */
  mountPoint: string;
}

export const OVERLAY_OPTIONS = 'userxattr,redirect_dir=nofollow,metacopy=off,index=off,xino=off';

/** Characters the mount's option string cannot carry (`,` separates options, `:` lower layers). */
const UNSAFE = /[,:\\\s"'$`]/;

/** Mount the overlay ($1..$4) on $4, then exec the rest; a failed mount exits 125 with the kernel's words. */
const SCRIPT = [
  'set -e',
  'mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3,$5" "$4" || exit 125',
  'shift 5',
  'exec "$@"',
].join('\n');

/** A path the launcher refuses (it would break the mount's options), or null. Pure. */
export function unsafeLayerPath(layers: OverlayLayers): string | null {
  const paths = [layers.lower, layers.upper, layers.work, layers.mountPoint, ...(layers.over ? [layers.over] : [])];
  return paths.find((p) => UNSAFE.test(p)) ?? null;
}

/** The argv that runs `argv` with the overlay mounted (see the module comment). Pure. */
export function overlayLaunchArgv(unshare: string, layers: OverlayLayers, argv: readonly string[]): string[] {
  return [...ownMountNamespace(unshare), ...overlayMountArgv(layers, argv)];
}

/** `unshare` into a user namespace of its own (uh's uid as root) and a mount namespace. */
export function ownMountNamespace(unshare: string): string[] {
  return [unshare, '--user', '--map-root-user', '--mount', '--'];
}

/**
 * The shell that mounts the overlay and execs `argv`, run inside a mount namespace of its own
 * (`ownMountNamespace`); refuses a layer path that mount options cannot carry. Pure.
 */
export function overlayMountArgv(layers: OverlayLayers, argv: readonly string[]): string[] {
  const bad = unsafeLayerPath(layers);
  if (bad !== null)
    throw new Error(`overlay layer path ${JSON.stringify(bad)} holds a character mount options cannot carry`);
  return [
    '/bin/sh',
    '-c',
    SCRIPT,
    'uh-overlay',
    layers.over ? `${layers.over}:${layers.lower}` : layers.lower,
    layers.upper,
    layers.work,
    layers.mountPoint,
    OVERLAY_OPTIONS,
    ...argv,
  ];
}

export type OverlayProbe = { ok: true; unshare: string } | { ok: false; reason: string };

/**
 * Can this host mount an overlay in a user namespace, with whiteouts as uh reads them? One mount
 * in a scratch dir under `scratchRoot` (on the cache's filesystem: upper and work must share it):
 * a file of the lower layer deleted must leave a character device 0/0 in the upper one.
 */
export function probeOverlay(scratchRoot: string, path: string | undefined): OverlayProbe {
  const unshare = whichOnPath('unshare', path);
  if (unshare === null) return { ok: false, reason: 'unshare (util-linux) not found on PATH' };
  makeDir(scratchRoot);
  const dir = mkdtempSync(join(scratchRoot, 'probe-'));
  try {
    const layers = { lower: join(dir, 'l'), upper: join(dir, 'u'), work: join(dir, 'w'), mountPoint: join(dir, 'm') };
    for (const d of [layers.lower, layers.upper, layers.work, layers.mountPoint]) makeDir(d);
    writeFileSync(join(layers.lower, 'gone'), 'x');
    const argv = overlayLaunchArgv(unshare, layers, [
      '/bin/sh',
      '-c',
      'rm "$0/gone" && cat "$0/kept"',
      layers.mountPoint,
    ]);
    writeFileSync(join(layers.lower, 'kept'), 'merged');
    const run = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8', timeout: 10_000 });
    if (run.status !== 0 || run.stdout !== 'merged')
      return {
        ok: false,
        reason: `overlay mount in a user namespace failed: ${(run.stderr || `exit ${run.status}`).trim()}`,
      };
    const st = lstatSync(join(layers.upper, 'gone'));
    if (!st.isCharacterDevice() || st.rdev !== 0)
      return { ok: false, reason: 'the overlay wrote a whiteout uh cannot read' };
    return { ok: true, unshare };
  } catch (error) {
    return { ok: false, reason: `overlay probe: ${(error as Error).message}` };
  } finally {
    unlockWorkDir(join(dir, 'w'));
    removeTree(dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Make the overlay's scratch dir removable: the kernel leaves `<work>/work` at mode 000 (holding
 * its shared whiteout), which its owner may delete only once it may read and write it again
 * (root passes anyway; uh as a plain user does not).
 */
export function unlockWorkDir(work: string): void {
  try {
    chmodSync(join(work, 'work'), 0o700);
  } catch {
    // not there: never mounted, or already removed
  }
}

/** A whiteout of the upper layer: a character device 0/0 (what `probeOverlay` checked). */
export function isWhiteout(st: { isCharacterDevice(): boolean; rdev: number }): boolean {
  return st.isCharacterDevice() && st.rdev === 0;
}

/**
 * Whether `path` exists in the merged tree, read from the layers on the host (where the mount
 * point is empty): the upper layer's entry (a whiteout: gone), else `over`'s, else the lower one's. Paths
 * outside the mount point are looked up as they are. An entry under a directory the upper layer
 * made opaque may read as present: the process that looks for it in the namespace is told.
 */
export function existsInOverlay(layers: OverlayLayers, path: string): boolean {
  const rel = relative(layers.mountPoint, path);
  if (rel.startsWith('..') || isAbsolute(rel)) return existsSync(path);
  for (const layer of [layers.upper, ...(layers.over ? [layers.over] : [])])
    try {
      return !isWhiteout(lstatSync(join(layer, rel)));
    } catch {
      // not in this layer: the next one down
    }
  return existsSync(join(layers.lower, rel));
}
