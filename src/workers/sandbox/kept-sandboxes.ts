/**
 * The sandboxes uh keeps after a mission (a failure, `UH_KEEP_SANDBOX`), listed, and entered
 * with a command (`uh sandbox list`, `uh sandbox enter`; docs/sandboxes.md). What a kept
 * sandbox holds is the agent's: its scripts, its `.git/config` (hooks, `core.fsmonitor`), its
 * `package.json`. So the command runs as a mission's check does, under bubblewrap with the
 * mission's plan (isolation.ts: the host read-only, uh's dirs and the host's secrets masked, a
 * private home and /tmp), and with no network at all; its environment is the terminal's few
 * variables, not the caller's.
 *
 * A worktree sandbox is its directory, writable as it is on the host. An overlay sandbox is an
 * empty directory on the host: the command's namespace mounts, on its path, the kept upper layer
 * and the base as read-only lower layers under a scratch upper layer of its own
 * (`OverlayLayers.over`), so the command may write (a test run's caches) and nothing it writes
 * reaches what the mission left; the scratch layer goes when it exits.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { UhError } from '../../shared/errors.js';
import { makeDir } from '../../shared/fs/make-dir.js';
import { removeTree } from '../../shared/fs/deep-tree.js';
import { probeBwrap, whichOnPath } from '../../shared/process/bwrap-probe.js';
import type { SpawnedGroup, SpawnGroup, SpawnGroupResult } from '../../shared/process/spawn-group.js';
import { isolatedSpawn, isolationPlan, isolationView, type IsolationScope } from './isolation.js';
import { basesRoot } from './overlay-base.js';
import { unlockWorkDir, type OverlayLayers } from './overlay-mount.js';
import { overlayLayers } from './overlay-sandbox.js';
import type { ProgramRefusal } from './program-paths.js';
import { gitDirSpec, readRecords, type SandboxRecord } from './worktree.js';

export interface KeptSandbox {
  name: string;
  operation_id: string;
  backend: 'git-worktree' | 'overlay';
  /** The sandbox's path (an overlay's: empty on the host; `uh sandbox enter` shows its files). */
  path: string;
  commit: string;
  created_at: string;
  /** When the sweep or `uh gc` removes it. */
  keep_until: string;
}

const backendOf = (r: SandboxRecord): KeptSandbox['backend'] => (r.backend === 'overlay' ? 'overlay' : 'git-worktree');
const newestFirst = (a: SandboxRecord, b: SandboxRecord) => b.created_at.localeCompare(a.created_at);

/** The kept sandboxes of `cacheDir`, newest first. */
export function keptSandboxes(cacheDir: string): KeptSandbox[] {
  return readRecords(cacheDir)
    .filter((r) => r.state === 'retained')
    .sort(newestFirst)
    .map((r) => ({
      name: r.name,
      operation_id: r.operation_id,
      backend: backendOf(r),
      path: r.path,
      commit: r.commit,
      created_at: r.created_at,
      keep_until: r.keep_until,
    }));
}

const KEPT_HINT =
  'uh sandbox list shows the kept ones; a sandbox is kept when its mission fails, or always with UH_KEEP_SANDBOX=1, for UH_SANDBOX_KEEP_HOURS';

/** The record of `which` (a sandbox name, else an operation id: its newest sandbox), kept; or a typed error. */
function keptRecord(cacheDir: string, which: string): SandboxRecord {
  const records = readRecords(cacheDir).sort(newestFirst);
  const record = records.find((r) => r.name === which) ?? records.find((r) => r.operation_id === which);
  if (record === undefined)
    throw new UhError('not_found', `<sandbox>: no sandbox of operation or name ${which} in ${cacheDir}`, {
      hint: KEPT_HINT,
    });
  if (record.state !== 'retained') {
    const why =
      record.state === 'active'
        ? 'is in use (its mission is running; or uh stopped while it ran, and uh gc collects it)'
        : 'is in the warm pool, reset for the next mission';
    throw new UhError('invalid_input', `<sandbox>: ${record.name} ${why}, not kept`, { hint: KEPT_HINT });
  }
  return record;
}

export interface EnterRequest {
  cacheDir: string;
  stateDir: string;
  /** A sandbox name or an operation id. */
  which: string;
  argv: readonly string[];
  /** The caller's environment: PATH, HOME and the terminal's variables pass in; nothing else. */
  env: Readonly<Record<string, string | undefined>>;
  tmpfsBytes: number;
  readable: readonly string[];
  ownSecrets: readonly string[];
}

const PASSED = ['PATH', 'HOME', 'TERM', 'LANG', 'LC_ALL', 'USER', 'LOGNAME', 'SHELL', 'COLUMNS', 'LINES'];

/** Run the request's command in the kept sandbox (see the module comment); its exit code. */
export async function enterKept(request: EnterRequest): Promise<number> {
  const record = keptRecord(request.cacheDir, request.which);
  const bwrap = probeBwrap(request.env.PATH);
  if (!bwrap.ok)
    throw new UhError('runtime_unavailable', `uh sandbox enter runs the command isolated: ${bwrap.reason}`, {
      hint: 'install bubblewrap (Debian: apt install bubblewrap)',
    });
  const overlay = record.backend === 'overlay' ? scratchOverlay(request.cacheDir, record, request.env.PATH) : null;
  if (overlay === null && !existsSync(record.path))
    throw new UhError('not_found', `<sandbox>: ${record.path} is gone`, { hint: KEPT_HINT });
  try {
    const scope: IsolationScope = {
      bwrap: bwrap.path,
      worktree: record.path,
      cacheDir: request.cacheDir,
      stateDir: request.stateDir,
      repositoryPath: null,
      home: request.env.HOME,
      tmpfsBytes: bwrap.tmpfsSize ? request.tmpfsBytes : null,
      gitReadable: [gitDirSpec({ path: record.mirror }, record.commit, false).alternates],
      extra: { writable: [], readable: [] },
      path: request.env.PATH,
      network: false,
      egress: null,
      operatorReadable: request.readable,
      ownSecrets: request.ownSecrets,
    };
    const plan = isolationPlan(scope);
    let refused: ProgramRefusal | null = null;
    const run = isolatedSpawn(terminalSpawn, plan, {
      view: isolationView(scope, plan),
      onRefuse: (r) => (refused ??= r),
      ...(overlay ? { overlay } : {}),
    });
    const env = Object.fromEntries(PASSED.filter((k) => request.env[k] !== undefined).map((k) => [k, request.env[k]]));
    const result = await run({ argv: request.argv, cwd: record.path, env }).result;
    const refusal = refused as ProgramRefusal | null;
    if (refusal) throw new UhError('invalid_input', refusal.message, { hint: refusal.hint });
    if (result.spawnError) throw new UhError('not_found', `${request.argv[0]}: ${result.spawnError.message}`);
    return result.exitCode ?? 128 + (result.signal ? (constants.signals[result.signal as NodeJS.Signals] ?? 0) : 0);
  } finally {
    if (overlay) {
      unlockWorkDir(overlay.layers.work);
      removeTree(join(overlay.layers.work, '..'));
    }
  }
}

/** An overlay sandbox's layers under a scratch upper layer (`over`: the kept one), and `unshare`. */
function scratchOverlay(
  cacheDir: string,
  record: SandboxRecord,
  path: string | undefined,
): { unshare: string; layers: OverlayLayers } {
  const baseTree = join(basesRoot(cacheDir), record.base ?? '', 'tree');
  if (record.base === undefined || !existsSync(baseTree))
    throw new UhError('not_found', `<sandbox>: the base checkout of ${record.name} is gone`, { hint: KEPT_HINT });
  const unshare = whichOnPath('unshare', path);
  if (unshare === null) throw new UhError('runtime_unavailable', 'unshare (util-linux) not found on PATH');
  const kept = overlayLayers(record.path, baseTree);
  const privateDir = join(kept.upper, '..');
  makeDir(privateDir);
  const scratch = mkdtempSync(join(privateDir, 'enter-'));
  for (const d of ['upper', 'work']) makeDir(join(scratch, d));
  const layers = { ...kept, over: kept.upper, upper: join(scratch, 'upper'), work: join(scratch, 'work') };
  return { unshare, layers };
}

/** A SpawnGroup on this terminal: stdio inherited, the exit as `SpawnGroupResult`. */
const terminalSpawn: SpawnGroup = (options) => {
  const started = Date.now();
  const child = spawn(options.argv[0] as string, options.argv.slice(1), {
    cwd: options.cwd,
    env: options.env,
    stdio: 'inherit',
  });
  const result = new Promise<SpawnGroupResult>((resolve) => {
    const done = (r: Partial<SpawnGroupResult>) =>
      resolve({
        exitCode: null,
        signal: null,
        timedOut: false,
        aborted: false,
        durationMs: Date.now() - started,
        ...r,
      });
    child.once('error', (e: NodeJS.ErrnoException) =>
      done({ spawnError: { code: e.code ?? 'ERR', message: e.message } }),
    );
    child.once('exit', (exitCode, signal) => done({ exitCode, signal }));
  });
  const group: SpawnedGroup = {
    pid: child.pid,
    stdin: null,
    stdout: null,
    stderr: null,
    result,
    terminate: () => child.kill('SIGTERM'),
  };
  return group;
};
