/**
 * Is bubblewrap here, and can it create the namespaces uh's isolation uses (PID, IPC, network,
 * mount)? Probed once per PATH with a real `bwrap … true`; never throws. Used by the pipeline
 * (src/workers/sandbox/isolation.ts) and `uh doctor`. The probe also mounts a tmpfs with `--size`
 * (bubblewrap 0.7 and later): where that option is missing, a second probe without it decides,
 * and `tmpfsSize: false` says the private /tmp and home cannot be capped.
 *
 * With a `cacheFile` (in uh's cache dir), a successful probe is also remembered across processes
 * for `PROBE_TTL_MS`, keyed by the bwrap binary's identity (path, device, inode, size, mtime):
 * a bwrap replaced, upgraded or removed is probed again at once. A failed probe is never kept
 * across processes, so a host fixed by its operator is seen by the next run.
 */
import { spawnSync } from 'node:child_process';
import { statSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { delimiter, join, resolve } from 'node:path';

export type BwrapProbe = { ok: true; path: string; tmpfsSize: boolean } | { ok: false; reason: string };

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
/** How long a successful probe is believed across processes. */
export const PROBE_TTL_MS = 60 * 60 * 1000;

/** The identity of the bwrap binary: any change to it (or to where PATH finds it) voids a cached probe. */
function binaryIdentity(bwrap: string): string | null {
  try {
    const st = statSync(bwrap);
    return ['caps-checked', bwrap, st.dev, st.ino, st.size, st.mtimeMs].join(':');
  } catch {
    return null;
  }
}

/** The remembered probe's `tmpfsSize`, or null when there is no fresh stamp for this binary. */
function cachedOk(cacheFile: string, identity: string, now: number): boolean | null {
  try {
    const raw = readFileSync(cacheFile, 'utf8');
    if (raw.length > 4096) return null;
    const entry = JSON.parse(raw) as { identity?: unknown; at?: unknown; tmpfsSize?: unknown };
    const fresh =
      entry.identity === identity && typeof entry.at === 'number' && entry.at <= now && now - entry.at < PROBE_TTL_MS;
    return fresh && typeof entry.tmpfsSize === 'boolean' ? entry.tmpfsSize : null;
  } catch {
    return null;
  }
}

function storeOk(cacheFile: string, identity: string, now: number, tmpfsSize: boolean): void {
  try {
    const tmp = `${cacheFile}.${randomBytes(4).toString('hex')}`;
    writeFileSync(tmp, JSON.stringify({ identity, at: now, tmpfsSize }));
    renameSync(tmp, cacheFile);
  } catch {
    // Not kept: the next process probes again.
  }
}

/**
 * A probe that trusts no memo, for a run under bwrap that failed: when bwrap itself can no longer
 * set up its namespaces (userns disabled since the cached probe), say so, and forget the stamp.
 */
export function reprobeBwrap(path: string | undefined, cacheFile?: string): BwrapProbe {
  probes.delete(path ?? '');
  const probe = probeBwrap(path);
  probes.delete(path ?? '');
  if (!probe.ok && cacheFile) rmSync(cacheFile, { force: true });
  return probe;
}

export interface ProbeOptions {
  /** uh's own file remembering a successful probe across processes (outside every sandbox). */
  cacheFile?: string;
  now?: () => number;
}

/** Is bwrap here and can it create the namespaces we use? Cached per PATH (and in `cacheFile`); never throws. */
export function probeBwrap(path: string | undefined, options: ProbeOptions = {}): BwrapProbe {
  const key = path ?? '';
  const cached = probes.get(key);
  if (cached) return cached;
  const bwrap = whichOnPath('bwrap', path);
  const identity = bwrap && options.cacheFile ? binaryIdentity(bwrap) : null;
  const now = (options.now ?? Date.now)();
  const remembered = bwrap && identity && options.cacheFile ? cachedOk(options.cacheFile, identity, now) : null;
  if (bwrap && remembered !== null) {
    const ok: BwrapProbe = { ok: true, path: bwrap, tmpfsSize: remembered };
    probes.set(key, ok);
    return ok;
  }
  const probe: BwrapProbe = bwrap
    ? runProbe(bwrap, path)
    : { ok: false, reason: 'bwrap (Debian package bubblewrap) is not installed' };
  probes.set(key, probe);
  if (probe.ok && identity && options.cacheFile) storeOk(options.cacheFile, identity, now, probe.tmpfsSize);
  return probe;
}

const PROBE_ARGS = [
  '--ro-bind',
  '/',
  '/',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
  '--unshare-pid',
  '--unshare-ipc',
  '--unshare-net',
  '--die-with-parent',
  '--new-session',
];

/**
 * As root, bubblewrap makes no user namespace of its own and the child keeps every capability
 * (it could remount `/` read-write or unmount the masks). So uh asks for one: an unprivileged
 * uid and gid inside (`nobody`), and no capabilities at all. Unprivileged, bwrap already makes a
 * user namespace and drops every capability; nothing is added.
 */
export const ROOT_SANDBOX_ID = 65534;
export function userNamespaceArgs(uid: number | undefined = process.getuid?.()): string[] {
  return uid === 0 ? ownUserNamespace({ uid: ROOT_SANDBOX_ID, gid: ROOT_SANDBOX_ID }) : [];
}

/** A user namespace of the child's own, with these ids and no capability. Pure. */
export function ownUserNamespace(ids: { uid: number; gid: number }): string[] {
  return ['--unshare-user', '--uid', String(ids.uid), '--gid', String(ids.gid), '--cap-drop', 'ALL'];
}

/** The effective capability set of the probe's child (`CapEff` of /proc/self/status), hex. */
const CAPS = /^CapEff:\s*([0-9a-f]+)$/m;

/**
 * `bwrap … cat /proc/self/status` with a sized tmpfs; when bwrap refuses `--size` (bubblewrap
 * before 0.7: "Unknown option --size"), once more without it. A child that still holds a
 * capability (as root, a bwrap that cannot make a user namespace) is no isolation.
 */
function runProbe(bwrap: string, path: string | undefined): BwrapProbe {
  const attempt = (extra: string[]) =>
    spawnSync(bwrap, [...PROBE_ARGS, ...userNamespaceArgs(), ...extra, '--', 'cat', '/proc/self/status'], {
      timeout: 10_000,
      encoding: 'utf8',
      env: { PATH: path ?? '/usr/bin:/bin' },
    });
  const held = (stdout: string) => {
    const caps = CAPS.exec(stdout)?.[1];
    return caps === undefined || /[^0]/.test(caps) ? (caps ?? 'unreadable') : null;
  };
  const answer = (r: ReturnType<typeof attempt>, tmpfsSize: boolean): BwrapProbe => {
    const caps = held(r.stdout ?? '');
    if (caps === null) return { ok: true, path: bwrap, tmpfsSize };
    return { ok: false, reason: `the sandbox would keep capabilities (CapEff ${caps}): no isolation` };
  };
  let r = attempt(['--size', '1048576', '--tmpfs', '/tmp']);
  if (r.status === 0) return answer(r, true);
  if ((r.stderr ?? '').includes('--size')) {
    r = attempt(['--tmpfs', '/tmp']);
    if (r.status === 0) return answer(r, false);
  }
  return {
    ok: false,
    reason: `bwrap cannot create namespaces here: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n')[0]}`,
  };
}
