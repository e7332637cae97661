/**
 * Which backend makes an operation's sandbox (docs/sandboxes.md), from `UH_SANDBOX_BACKEND` and
 * what the host can do: `overlay` needs bubblewrap in use for the operation (the merged tree is
 * mounted in the namespace every isolated process starts in) and a host that mounts overlays in a
 * user namespace (`probeOverlay`, once per cache dir and process; a success is remembered in
 * `<cache>/overlay-probe.json` for the same kernel and `unshare`, as bwrap's probe is). `auto`
 * falls back to the worktree backend and says why; `overlay` refuses where it cannot work.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { release } from 'node:os';
import { join } from 'node:path';
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

/** The identity a remembered probe holds: the kernel and the `unshare` binary it ran. */
function identityOf(unshare: string): string {
  const st = statSync(unshare);
  return `${release()} ${unshare} ${st.ino} ${st.size} ${st.mtimeMs}`;
}

function remembered(cacheDir: string): OverlayProbe | null {
  try {
    const memo = JSON.parse(readFileSync(probeFile(cacheDir), 'utf8')) as { unshare?: unknown; identity?: unknown };
    if (typeof memo.unshare !== 'string' || memo.identity !== identityOf(memo.unshare)) return null;
    return { ok: true, unshare: memo.unshare };
  } catch {
    return null;
  }
}

/** This host's overlay probe for `cacheDir` (memoised; a success remembered across processes). */
export function overlayProbeFor(cacheDir: string, path: string | undefined): OverlayProbe {
  const key = `${cacheDir}\0${path ?? ''}`;
  const cached = probes.get(key) ?? remembered(cacheDir);
  if (cached) {
    probes.set(key, cached);
    return cached;
  }
  const probe = probeOverlay(join(sandboxesRoot(cacheDir), '.probe'), path);
  probes.set(key, probe);
  if (probe.ok)
    writeFileSync(probeFile(cacheDir), JSON.stringify({ unshare: probe.unshare, identity: identityOf(probe.unshare) }));
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
