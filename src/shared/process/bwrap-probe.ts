/**
 * Is bubblewrap here, and can it create the namespaces uh's isolation uses (PID, IPC, network,
 * mount)? Probed once per PATH with a real `bwrap … true`; never throws. Used by the pipeline
 * (src/workers/sandbox/isolation.ts) and `uh doctor`.
 */
import { spawnSync } from 'node:child_process';
import { statSync, existsSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

export type BwrapProbe = { ok: true; path: string } | { ok: false; reason: string };

/** The first executable `name` on PATH. */
export function whichOnPath(name: string, path: string | undefined): string | null {
  if (name.includes('/')) return existsSync(name) ? resolve(name) : null;
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

const probes = new Map<string, BwrapProbe>();

/** Is bwrap here and can it create the namespaces we use? Cached per PATH; never throws. */
export function probeBwrap(path: string | undefined): BwrapProbe {
  const key = path ?? '';
  const cached = probes.get(key);
  if (cached) return cached;
  const bwrap = whichOnPath('bwrap', path);
  let probe: BwrapProbe;
  if (!bwrap) probe = { ok: false, reason: 'bwrap (Debian package bubblewrap) is not installed' };
  else {
    const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--unshare-ipc', '--unshare-net', '--die-with-parent', '--new-session', '--', 'true'];
    const r = spawnSync(bwrap, args, { timeout: 10_000, encoding: 'utf8', env: { PATH: path ?? '/usr/bin:/bin' } });
    probe =
      r.status === 0
        ? { ok: true, path: bwrap }
        : { ok: false, reason: `bwrap cannot create namespaces here: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n')[0]}` };
  }
  probes.set(key, probe);
  return probe;
}
