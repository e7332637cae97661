/**
 * OS isolation of runtimes and checks with bubblewrap (docs/security.md "Isolation"). Each
 * process the pipeline spawns for the agent or a check runs under `bwrap`: the host read-only,
 * the cache dir (mirrors, other sandboxes), the state dir, the user's checkout and the real
 * home masked, the sandbox worktree and its git dir writable, the mirror it borrows objects from
 * read-only, a fresh private home and /tmp for each process it starts (tmpfs mounts inside the
 * child's namespace, capped by `UH_ISOLATION_TMPFS_BYTES`), what the runtime's adapter declares,
 * a PID namespace (nothing outlives the run) and the network mode (`egress`: its own namespace
 * whose only way out is uh's proxy; `none`; `host`). Where bwrap is missing
 * or cannot create namespaces, processes run unisolated and the receipt says `isolation: none`.
 */
import { createHash } from 'node:crypto';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { isolationRefusal } from '../../shared/host-policy.js';
import { bwrapArgv, type BwrapPlan } from '../../shared/process/bwrap-argv.js';
import { overlayBwrapArgv } from './overlay-isolation.js';
import { existsInOverlay, type OverlayLayers } from './overlay-mount.js';

/** An overlay sandbox's processes start in its namespace (`overlay-isolation.ts`). */
export interface OverlayLaunch {
  unshare: string;
  layers: OverlayLayers;
}
import type { EgressBridge } from '../../shared/process/egress-bridge.js';
import { probeBwrap, whichOnPath, type BwrapProbe } from '../../shared/process/bwrap-probe.js';
import {
  exposeArgv,
  exposePathEntries,
  sandboxView,
  secretLocations,
  type ProgramRefusal,
  type SandboxView,
} from './program-paths.js';
import { refusedSpawn } from './refused-spawn.js';
import { rootOnlyPaths } from './root-only-paths.js';
import { hostWalkFile, memoisedWalk, stamp } from './host-walk-memo.js';

export { probeBwrap, whichOnPath, type BwrapProbe };
import type { SpawnGroup } from '../../shared/process/spawn-group.js';

/** `UH_ISOLATION`: auto = bwrap where it works; require = refuse to run without; off = never. */
export type { IsolationMode } from '../../shared/config.js';
import type { IsolationMode } from '../../shared/config.js';
/** The mission's `sandbox.isolation`: `required` refuses to run unisolated whatever the host's mode. */
export type MissionIsolation = 'auto' | 'required' | 'off';

/** What the receipt and `uh doctor` say. */
export interface IsolationStatus {
  kind: 'bwrap' | 'none';
  /** Why not isolated (null when isolated). */
  reason: string | null;
  /** The network the agent and checks got: unisolated, that is always the host's (`host`). */
  network: NetworkMode;
}

/** `sandbox.network`: `egress` (default) its own namespace and uh's proxy, `none` no network, `host` the host's. */
export type NetworkMode = 'none' | 'egress' | 'host';

export type IsolationDecision =
  | { use: BwrapProbe & { ok: true }; status: IsolationStatus }
  | { use: null; status: IsolationStatus; refuse?: { message: string; hint: string } };

/**
 * Combine the host's mode, the mission's setting and the probe (a table of five rows). Host policy
 * first: a mission's `off` never lowers `require`, and lowers `auto` only where the host allows it.
 */
export function decideIsolation(
  mode: IsolationMode,
  mission: MissionIsolation,
  requested: NetworkMode,
  probe: () => BwrapProbe,
  allowMissionOff = false,
): IsolationDecision {
  // Unisolated, the processes share the host's network whatever was asked: the receipt says so.
  const network: NetworkMode = requested === 'none' ? 'none' : 'host';
  const lowering = isolationRefusal(mission, mode, allowMissionOff);
  if (lowering) {
    const hint = 'drop sandbox.isolation: off from the mission (docs/security.md#host-policy)';
    return { use: null, status: { kind: 'none', reason: lowering, network }, refuse: { message: lowering, hint } };
  }
  if (mission === 'off' || (mode === 'off' && mission !== 'required')) {
    const status: IsolationStatus = {
      kind: 'none',
      reason: mission === 'off' ? 'the mission sets sandbox.isolation: off' : 'UH_ISOLATION=off',
      network,
    };
    if (network === 'none')
      return {
        use: null,
        status,
        refuse: {
          message: `sandbox.network: none needs isolation, which is off (${status.reason})`,
          hint: 'allow isolation, or drop sandbox.network: none',
        },
      };
    return { use: null, status };
  }
  const found = probe();
  if (found.ok) return { use: found, status: { kind: 'bwrap', reason: null, network: requested } };
  const status: IsolationStatus = { kind: 'none', reason: found.reason, network };
  if (mode === 'require' || mission === 'required') {
    const who =
      mission === 'required' ? 'the mission requires isolation (sandbox.isolation: required)' : 'UH_ISOLATION=require';
    return {
      use: null,
      status,
      refuse: {
        message: `${who} but it is unavailable: ${found.reason}`,
        hint: 'install bubblewrap (apt-get install bubblewrap) and allow unprivileged user namespaces; `uh doctor` shows the state',
      },
    };
  }
  if (network === 'none') {
    return {
      use: null,
      status,
      refuse: {
        message: `sandbox.network: none needs isolation, which is unavailable: ${found.reason}`,
        hint: 'install bubblewrap, or drop sandbox.network: none',
      },
    };
  }
  return { use: null, status };
}

/** What one phase's processes may see, beyond the read-only host. */
export interface IsolationScope {
  bwrap: string;
  worktree: string;
  cacheDir: string;
  stateDir: string;
  /** The mission's repository when it is a local path (the user's checkout). */
  repositoryPath: string | null;
  /** The real home (masked; the private home is mounted at this path). */
  home: string | undefined;
  /** The size cap of the private /tmp and home, or null where bwrap cannot cap a tmpfs. */
  tmpfsBytes: number | null;
  /**
   * The git dirs the worktree's git reads, from uh's own records (the mirror's objects uh made),
   * never from the worktree's `.git`, which the agent may have rewritten.
   */
  gitReadable: readonly string[];
  /** Declared by the runtime adapter. */
  extra: { writable: readonly string[]; readable: readonly string[] };
  /** PATH of the child: its directories under a masked path stay readable, and what their entries need. */
  path: string | undefined;
  network: boolean;
  /** Egress mode: the bridge to uh's proxy (shared/process/egress-bridge.ts). */
  egress?: EgressBridge | null;
  /** `UH_ISOLATION_READABLE`: read-only for every process, unless that would re-expose a secret location. */
  operatorReadable?: readonly string[];
  /** uh's own files outside the cache and state dirs that are never exposed (its receipt key file, the Redis password file); a directory among them (UH_SECRETS_DIR) is also masked. */
  ownSecrets?: readonly string[];
  /** The uid uh runs as; 0 hides what only root may read (root-only-paths.ts). Unset: this process's. */
  uid?: number;
}

/** A local repository URL as a path (absolute paths and file://), else null. */
export function localRepositoryPath(url: string): string | null {
  if (url.startsWith('file://')) {
    try {
      return fileURLToPath(url);
    } catch {
      return null;
    }
  }
  return isAbsolute(url) ? url : null;
}

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
};
const isDir = (p: string): boolean => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/** The folder holding uh's package.json (its installation or checkout), or null. */
function installRoot(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}
const INSTALL_ROOT = installRoot();

/** The real home when it is one (not `/`): masked, and the private home is mounted at it. */
const homeOf = (scope: IsolationScope): string | null => (scope.home && scope.home !== '/' ? scope.home : null);

/** The bwrap plan of one phase (everything but env and cwd). */
export function isolationPlan(scope: IsolationScope): Omit<BwrapPlan, 'env' | 'cwd'> {
  const home = homeOf(scope);
  const hiding = hidingOf(scope);
  const masked = hiding.masks;
  const underMask = (p: string) =>
    masked.some((m) => p === m || p.startsWith(`${m}/`)) || p === '/tmp' || p.startsWith('/tmp/');
  const pathDirs = (scope.path ?? '').split(delimiter).filter((d) => d && isAbsolute(d) && underMask(d) && isDir(d));
  // uh's own installation (its runtimes' and fixtures' programs) stays readable when it lives under
  // /tmp, which the private tmp hides; never when that would re-expose a masked path inside it.
  const install =
    INSTALL_ROOT !== null &&
    underMask(INSTALL_ROOT) &&
    !masked.some((m) => m === INSTALL_ROOT || m.startsWith(`${INSTALL_ROOT}/`) || INSTALL_ROOT.startsWith(`${m}/`))
      ? [INSTALL_ROOT]
      : [];
  const readable = [...scope.gitReadable, ...scope.extra.readable, ...pathDirs, ...install].filter(isAbsolute);
  const writable = [scope.worktree, real(scope.worktree), ...scope.extra.writable].filter(isAbsolute);
  return {
    bwrap: scope.bwrap,
    // The private home is its own tmpfs at the home's path: masking that path first would only stack two.
    masked: masked.filter((p) => p !== home),
    home,
    tmpfsBytes: scope.tmpfsBytes,
    readable: [...readable, ...programBinds(scope, hiding, pathDirs, [...readable, ...writable])],
    writable,
    hidden: hiding.hidden,
    network: scope.network,
    egress: scope.egress ?? null,
  };
}

/** The cache dir, the state dir, the user's checkout and the real home (and their real paths), if they exist. */
function ownMasks(scope: IsolationScope): string[] {
  // ownSecrets that are directories (UH_SECRETS_DIR) are hidden wherever they are; files (the key) stay unbound.
  return [scope.cacheDir, scope.stateDir, scope.repositoryPath, scope.home, ...(scope.ownSecrets ?? [])]
    .filter((p): p is string => typeof p === 'string' && p !== '/' && isDir(p))
    .flatMap((p) => [...new Set([p, real(p)])]);
}

/** What a phase hides of the host, read once per plan. */
interface Hiding {
  /** uh's own masks, then (run as root) root's home and the root-only directories. */
  masks: string[];
  /** Run as root: the root-only files (each under a read-only /dev/null). */
  hidden: string[];
  /** The secret locations: under the real home, and uh's own dirs and files. */
  secrets: string[];
}

/** Each scope's hiding, read once: a phase's plan and its view ask for it of the same scope. */
const hidings = new WeakMap<IsolationScope, Hiding>();

function hidingOf(scope: IsolationScope): Hiding {
  let hiding = hidings.get(scope);
  if (!hiding) hidings.set(scope, (hiding = readHiding(scope)));
  return hiding;
}

function readHiding(scope: IsolationScope): Hiding {
  const own = ownMasks(scope);
  const rootFile = hostWalkFile(scope.cacheDir, 'root-only');
  const rootOnly = rootOnlyPaths(scope.uid ?? process.getuid?.(), own, Date.now(), rootFile);
  const secrets = secretLocations(homeOf(scope), [scope.cacheDir, scope.stateDir, ...(scope.ownSecrets ?? [])]);
  return { masks: [...own, ...rootOnly.dirs], hidden: rootOnly.files, secrets };
}

/** How a phase's processes see the host: what is hidden, and what is never re-exposed (program-paths.ts). */
export function isolationView(
  scope: IsolationScope,
  plan: Pick<BwrapPlan, 'readable' | 'writable'>,
  hiding: Hiding = hidingOf(scope),
): SandboxView {
  return sandboxView(hiding.masks, [...plan.readable, ...plan.writable], hiding.secrets);
}

/** The operator's readable paths and what the entries of the hidden PATH directories need. */
function programBinds(scope: IsolationScope, hiding: Hiding, pathDirs: readonly string[], bound: string[]): string[] {
  const view = isolationView(scope, { readable: bound, writable: [] }, hiding);
  const operator = (scope.operatorReadable ?? []).filter((p) => isAbsolute(p) && !view.holdsSecret(p));
  return [...operator, ...pathEntryBinds(scope, hiding, pathDirs, [...bound, ...operator])];
}

/** PATH-entry binds are walked again at least this often, and whenever a PATH directory changes. */
const PATH_ENTRIES_MEMO_MS = 10 * 60_000;

const StringsSchema = z.array(z.string());

/**
 * `exposePathEntries` of the hidden PATH directories, kept across runs (host-walk-memo.ts). The
 * view leaves out the binds inside uh's own dirs (the operation's worktree, its git dirs, its
 * files), so runs share one answer: they are secret locations, so no bind is ever taken from
 * inside them, and an entry whose links lead into them is refused either way.
 */
function pathEntryBinds(scope: IsolationScope, hiding: Hiding, pathDirs: readonly string[], bound: string[]): string[] {
  if (pathDirs.length === 0) return [];
  const own = [scope.cacheDir, scope.stateDir];
  const shared = bound.filter((b) => !own.some((o) => b === o || b.startsWith(`${o}/`)));
  const key = JSON.stringify({
    pathDirs,
    path: scope.path,
    masks: hiding.masks,
    bound: shared,
    secrets: hiding.secrets,
  });
  const digest = createHash('sha256').update(key).digest('hex').slice(0, 16);
  const parse = (v: unknown) => StringsSchema.safeParse(v).data ?? null;
  return memoisedWalk(hostWalkFile(scope.cacheDir, `path-entries-${digest}`), key, PATH_ENTRIES_MEMO_MS, parse, () => {
    const dirs = pathDirs.map((d) => [d, stamp(d)] as const);
    const view = isolationView(scope, { readable: shared, writable: [] }, hiding);
    return { value: exposePathEntries(pathDirs, scope.path, view), dirs };
  }).value;
}

/**
 * A spawn that runs each child under bwrap with `plan`. A program that cannot be found is passed
 * to `spawn` unwrapped, so the caller still sees the usual `spawnError` (ENOENT). With `programs`,
 * the program and its path arguments are made visible (program-paths.ts), or, where they cannot
 * be, the child is never started: `onRefuse` hears why and the spawn fails (`EUHHIDDEN`).
 */
export function isolatedSpawn(
  spawn: SpawnGroup,
  plan: Omit<BwrapPlan, 'env' | 'cwd'>,
  programs?: { view: SandboxView; onRefuse: (refusal: ProgramRefusal) => void; overlay?: OverlayLaunch },
): SpawnGroup {
  const overlay = programs?.overlay;
  const exists = (path: string) => (overlay ? existsInOverlay(overlay.layers, path) : existsSync(path));
  return (options) => {
    const program = options.argv[0];
    const found =
      program !== undefined &&
      (program.includes('/') ? exists(resolve(options.cwd, program)) : whichOnPath(program, options.env.PATH) !== null);
    if (!found) return spawn(options);
    const exposed = programs
      ? exposeArgv(options.argv, options.cwd, options.env.PATH, programs.view)
      : { readable: [], refusal: null };
    if (exposed.refusal) {
      programs?.onRefuse(exposed.refusal);
      return refusedSpawn(options, exposed.refusal);
    }
    const readable = [...plan.readable, ...exposed.readable];
    const full = { ...plan, readable, env: options.env, cwd: options.cwd };
    const argv = overlay
      ? overlayBwrapArgv(overlay.unshare, overlay.layers, full, options.argv)
      : bwrapArgv(full, options.argv);
    return spawn({ ...options, argv, env: { PATH: options.env.PATH ?? '/usr/bin:/bin' } });
  };
}
