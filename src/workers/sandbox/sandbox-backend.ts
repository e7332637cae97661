/**
 * Which backend makes an operation's sandbox (docs/sandboxes.md), from `UH_SANDBOX_BACKEND` and
 * what the host can do: `overlay` needs bubblewrap in use for the operation (the merged tree is
 * mounted in the namespace every isolated process starts in) and a host that mounts overlays in a
 * user namespace (`probeOverlay`, once per cache dir and process; a success is remembered in
 * `<cache>/overlay-probe.json` for an hour, for the same kernel, `unshare`, uid and user-namespace
 * settings, as bwrap's probe is, and forgotten when an overlay run fails and a new probe fails
 * too: `reprobeOverlay`). `auto` falls back to the worktree backend and says why; `overlay`
 * refuses where it cannot work.
 */
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { release } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { SandboxBackendSetting } from '../../shared/config.js';
import { UhError } from '../../shared/errors.js';
import { probeOverlay, type OverlayProbe } from './overlay-mount.js';
import { sandboxesRoot } from './worktree.js';

export type SandboxBackendChoice =
  | { kind: 'overlay'; unshare: string }
  | {
      kind: 'worktree';
      /** Why not overlay under `auto`; null when `worktree` was asked for. */ reason: string | null;
    };

const probes = new Map<string, OverlayProbe>();

function probeFile(cacheDir: string): string {
  return join(cacheDir, 'overlay-probe.json');
}

/** How long a remembered success is believed (as bwrap's probe: bwrap-probe.ts). */
export const OVERLAY_PROBE_TTL_MS = 60 * 60 * 1000;

/** The host settings that decide whether a user namespace may mount (absent ones read as `-`). */
const USERNS_SETTINGS = [
  '/proc/sys/kernel/unprivileged_userns_clone',
  '/proc/sys/user/max_user_namespaces',
  '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
];

const setting = (path: string): string => {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '-';
  }
};

/**
 * The identity a remembered probe holds: the kernel, the `unshare` binary it ran, uh's uid and
 * the user-namespace settings (a cache dir on a volume that a more confined container mounts
 * again, or a sysctl turned off, is probed again).
 */
function identityOf(unshare: string): string {
  const st = statSync(unshare);
  const userns = USERNS_SETTINGS.map(setting).join(',');
  return `${release()} ${unshare} ${st.ino} ${st.size} ${st.mtimeMs} uid=${process.getuid?.() ?? '-'} ${userns}`;
}

const MemoSchema = z.object({ unshare: z.string(), identity: z.string(), at: z.number() });

function remembered(cacheDir: string, now: number): OverlayProbe | null {
  try {
    const memo = MemoSchema.parse(JSON.parse(readFileSync(probeFile(cacheDir), 'utf8')));
    if (memo.identity !== identityOf(memo.unshare) || now - memo.at >= OVERLAY_PROBE_TTL_MS || now < memo.at)
      return null;
    return { ok: true, unshare: memo.unshare };
  } catch {
    return null;
  }
}

const probeKey = (cacheDir: string, path: string | undefined): string => `${cacheDir}\0${path ?? ''}`;

/** One real probe, in a scratch dir on the cache's filesystem (upper and work must share it). */
const probeIn = (cacheDir: string, path: string | undefined): OverlayProbe =>
  probeOverlay(join(sandboxesRoot(cacheDir), '.probe'), path);

/** This host's overlay probe for `cacheDir` (memoised; a success remembered across processes for an hour). */
export function overlayProbeFor(cacheDir: string, path: string | undefined, now = Date.now()): OverlayProbe {
  const key = probeKey(cacheDir, path);
  const cached = probes.get(key) ?? remembered(cacheDir, now);
  if (cached) {
    probes.set(key, cached);
    return cached;
  }
  const probe = probeIn(cacheDir, path);
  probes.set(key, probe);
  if (probe.ok) {
    const memo = { unshare: probe.unshare, identity: identityOf(probe.unshare), at: now };
    writeFileSync(probeFile(cacheDir), JSON.stringify(memo));
  }
  return probe;
}

/**
 * A probe that trusts no memo, for an overlay sandbox's run that failed: when the host can no
 * longer mount an overlay in a user namespace, the remembered success is forgotten.
 */
export function reprobeOverlay(cacheDir: string, path: string | undefined): OverlayProbe {
  probes.delete(probeKey(cacheDir, path));
  const probe = probeIn(cacheDir, path);
  if (!probe.ok) rmSync(probeFile(cacheDir), { force: true });
  return probe;
}

/** The backend for one operation; throws (`sandbox`) when `overlay` is required and cannot be had. */
export function chooseSandboxBackend(
  setting: SandboxBackendSetting,
  host: { isolated: boolean; cacheDir: string; path: string | undefined },
): SandboxBackendChoice {
  if (setting === 'worktree') return { kind: 'worktree', reason: null };
  const probe: OverlayProbe = host.isolated
    ? overlayProbeFor(host.cacheDir, host.path)
    : { ok: false, reason: 'the operation runs without bubblewrap (overlay sandboxes are mounted under it)' };
  if (probe.ok) return { kind: 'overlay', unshare: probe.unshare };
  if (setting === 'auto') return { kind: 'worktree', reason: probe.reason };
  throw new UhError('sandbox', `UH_SANDBOX_BACKEND=overlay cannot make this sandbox: ${probe.reason}`, {
    hint: 'set UH_SANDBOX_BACKEND=auto (overlay where it works, else a worktree) or worktree; `uh doctor` says why',
  });
}
