/**
 * The diff of an overlay sandbox (docs/sandboxes.md): uh's process cannot see the merged tree
 * (it is mounted only in a namespace), so one helper process is started inside one
 * (`overlay-diff-main.ts` under `overlayLaunchArgv`) and runs the very `captureDiff` a worktree
 * sandbox gets, over the merged tree, with the listing limited to what the upper layer names.
 * Same code, same bytes: test/workers/verification/overlay-diff.test.ts runs both backends over
 * generated changes and requires the same patch, digest, names and tree. One node start-up
 * (~60 ms) and one mount per diff, whatever the size of the tree. The pipeline starts the
 * helper ahead (`startOverlayHelper`, before the agent): its node start-up and module loading
 * then happen while the agent runs, and it mounts the overlay only when its request comes, after
 * the agent's namespace is gone (two mounts of one upper layer at once are undefined). A helper
 * started ahead waits `HELPER_WAIT_MS` at most; one gone when it is needed, or one that fails, is
 * replaced by a fresh one (the `diff.captured` event then says why, `helper_replaced`).
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ChangedFileSchema, ScopeViolationSchema } from '../../shared/contracts/receipt.js';
import { UhError } from '../../shared/errors.js';
import { spawnGroup, type SpawnedGroup } from '../../shared/process/spawn-group.js';
import {
  overlayLaunchArgv,
  overlayMountArgv,
  ownMountNamespace,
  type OverlayLayers,
} from '../sandbox/overlay-mount.js';
import type { DiffCapture } from './capture-diff.js';
import type { TreeWorkRequest, TreeWorkResult } from './tree-work.js';

export const OverlayDiffRequestSchema = z.strictObject({
  workDir: z.string(),
  baseCommit: z.string(),
  patchPath: z.string(),
  scratchDir: z.string(),
  views: z.strictObject({ upper: z.string(), lower: z.string(), merged: z.string() }),
  gitFastPath: z.boolean(),
  capBytes: z.number().int().positive(),
  keptIgnored: z.array(z.string()),
  excluded: z.array(z.string()),
  baseFactsDir: z.string().nullable(),
  timeoutMs: z.number().int().positive().nullable(),
});
export type OverlayDiffRequest = z.infer<typeof OverlayDiffRequestSchema>;

const DiffCaptureSchema = z.object({
  changed: z.array(ChangedFileSchema),
  patchPath: z.string(),
  bytes: z.number(),
  digest: z.string(),
  truncated: z.boolean(),
  bytesTotal: z.number(),
  capBytes: z.number(),
  headCommit: z.string().nullable(),
  tree: z.string().nullable(),
  flagged: z.array(ScopeViolationSchema),
  /** How many pathspecs the upper layer named (null: it named too many, the whole tree was listed). */
  listed: z.number().nullable(),
});

/**
 * The helper of uh's installation: `bin/overlay-helper.js`, which runs
 * `dist/bundle/overlay-helper.cjs` (scripts/bundle.mjs: one file to load) through a code cache
 * in `codeCacheDir`; else the compiled module `dist/src/workers/verification/overlay-diff-main.js`.
 * The argv after node.
 */
export function overlayDiffMain(codeCacheDir?: string): string[] {
  let dir = dirname(fileURLToPath(import.meta.url));
  const built = (root: string) => [join(root, 'dist', 'src', 'workers', 'verification', 'overlay-diff-main.js')];
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) {
      const bundled = existsSync(join(dir, 'dist', 'bundle', 'overlay-helper.cjs'));
      return bundled ? [join(dir, 'bin', 'overlay-helper.js'), codeCacheDir ?? '-'] : built(dir);
    }
    const up = dirname(dir);
    if (up === dir) return built(dir);
    dir = up;
  }
}

/** What `captureOverlayDiff` needs besides the request. */
export interface OverlayDiffRun {
  unshare: string;
  layers: OverlayLayers;
  /** Bounds the helper (the diff's share of the mission's time). */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Where the helper keeps its code cache (uh's `<cache dir>/code-cache`); none when unset. */
  codeCacheDir?: string;
  /** A helper started ahead (`startOverlayHelper`) to use, when it is still there. */
  started?: OverlayHelper;
}

/** The diff of the overlay sandbox `run.layers` describes; `listed` as the helper counted it. */
export async function captureOverlayDiff(
  request: Omit<OverlayDiffRequest, 'views' | 'workDir'>,
  run: OverlayDiffRun,
): Promise<DiffCapture & { listed: number | null }> {
  const full: OverlayDiffRequest = { ...request, workDir: run.layers.mountPoint, views: viewsOf(run.layers) };
  return DiffCaptureSchema.parse(await runHelper(full, run));
}

const TreeWorkResultSchema = z.object({
  usage: z.object({
    bytes: z.number(),
    files: z.number(),
    over: z.enum(['worktree_bytes', 'worktree_files']).nullable(),
  }),
  replaced: z.string().nullable(),
  walked: z.array(ScopeViolationSchema),
  ignored: z.object({ removed: z.array(z.string()), kept: z.array(z.string()) }),
  diff: DiffCaptureSchema.omit({ listed: true }).nullable(),
});

/**
 * The whole tree step (`tree-work.ts`: measure, `.git` restore, walk, ignored files, diff) of
 * an overlay sandbox, in one helper inside its namespace; the listing limited to what the upper
 * layer names once the ignored files are gone.
 */
/** The tree step's result; `helperFailure`: why the helper started ahead was replaced. */
export type OverlayTreeWorkResult = TreeWorkResult & { helperFailure?: string };

export async function overlayTreeWork(
  request: Omit<TreeWorkRequest, 'workDir'>,
  run: OverlayDiffRun,
): Promise<OverlayTreeWorkResult> {
  const tree: TreeWorkRequest = { ...request, workDir: run.layers.mountPoint };
  const payload = { tree, views: viewsOf(run.layers) };
  const started = run.started?.take();
  let helperFailure: string | undefined;
  if (started) {
    const mount = overlayMountArgv(run.layers, ['/bin/true']);
    try {
      return TreeWorkResultSchema.parse(await answerOf(started, { ...payload, mount }, run.signal));
    } catch (error) {
      // Its namespace (and its mount) died with it; a fresh helper does the whole step again
      // (each part of it can be done twice). A cancel or the deadline is not retried.
      if (run.signal?.aborted) throw error;
      helperFailure = error instanceof Error ? error.message.slice(0, 500) : String(error);
    }
  }
  const result = TreeWorkResultSchema.parse(await runHelper(payload, run));
  return helperFailure === undefined ? result : { ...result, helperFailure };
}

function viewsOf(layers: OverlayLayers): OverlayDiffRequest['views'] {
  return { upper: layers.upper, lower: layers.lower, merged: layers.mountPoint };
}

/** A helper waiting in its own namespaces for one request; `close` ends it if it got none. */
export interface OverlayHelper {
  readonly pid: number | undefined;
  /** The helper, once, while it is still running; null after that, after `close`, or once it has exited. */
  take(): SpawnedGroup | null;
  close(): void;
}

/**
 * How long a helper started ahead waits for its request before it ends itself: it holds ~50 MB
 * while it waits, and what it saves (~50 ms) only counts for a short agent; after a longer one
 * the diff starts a fresh helper, as it would have without this.
 */
export const HELPER_WAIT_MS = 5000;

/**
 * Start the helper now, unmounted, to wait for its request: `overlayTreeWork` with `started`
 * sends it one with the mount. Bounded by `timeoutMs` from now; one not asked within `waitMs`
 * is closed. A helper gone by then is replaced by a fresh one.
 */
export function startOverlayHelper(
  run: Pick<OverlayDiffRun, 'unshare' | 'timeoutMs' | 'codeCacheDir'> & { waitMs?: number },
): OverlayHelper {
  const main = overlayDiffMain(run.codeCacheDir);
  const child = helperChild([...ownMountNamespace(run.unshare), process.execPath, ...main], 'pipe', run);
  child.stdin?.on('error', () => {}); // EPIPE when it has exited
  let exited = false;
  let taken = false;
  void child.result.then(() => (exited = true));
  const close = () => {
    clearTimeout(waiting);
    if (!taken) child.stdin?.end();
    taken = true;
    if (!exited) child.terminate();
  };
  const waiting = setTimeout(close, run.waitMs ?? HELPER_WAIT_MS);
  waiting.unref();
  const take = () => {
    if (taken || exited) return null;
    clearTimeout(waiting);
    taken = true;
    return child;
  };
  return { pid: child.pid, take, close };
}

function helperChild(
  argv: string[],
  stdin: 'pipe' | { text: string },
  run: Pick<OverlayDiffRun, 'timeoutMs' | 'signal'>,
) {
  return spawnGroup({
    argv,
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
    stdin,
    stdout: 'pipe',
    stderr: 'pipe',
    timeoutMs: run.timeoutMs,
    killGraceMs: 2000,
    ...(run.signal ? { signal: run.signal } : {}),
  });
}

/** Start the helper in the sandbox's namespace with `payload` on stdin; its JSON answer. */
async function runHelper(payload: unknown, run: OverlayDiffRun): Promise<unknown> {
  const argv = overlayLaunchArgv(run.unshare, run.layers, [process.execPath, ...overlayDiffMain(run.codeCacheDir)]);
  return answerOf(helperChild(argv, { text: JSON.stringify(payload) }, run), null);
}

/** The helper's JSON answer (`payload`, when given, written to its stdin first). */
async function answerOf(child: SpawnedGroup, payload: unknown, signal?: AbortSignal): Promise<unknown> {
  const out: Buffer[] = [];
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => (err = `${err}${chunk.toString('utf8')}`.slice(-2000)));
  let stopped = false;
  const stop = () => {
    stopped = true;
    child.terminate();
  };
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  if (payload !== null) child.stdin?.end(JSON.stringify(payload));
  const exit = await child.result.finally(() => signal?.removeEventListener('abort', stop));
  if (exit.exitCode !== 0 || exit.timedOut || exit.aborted || stopped) {
    const why = exit.timedOut ? 'timed out' : exit.aborted || stopped ? 'was aborted' : `exited ${exit.exitCode}`;
    throw new UhError('sandbox', `the overlay helper ${why}: ${err.trim().slice(-500)}`, {
      hint: 'run `uh doctor`: it says whether this host mounts overlays in a user namespace',
    });
  }
  return JSON.parse(Buffer.concat(out).toString('utf8'));
}
