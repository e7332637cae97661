/**
 * The diff of an overlay sandbox (docs/sandboxes.md): uh's process cannot see the merged tree
 * (it is mounted only in a namespace), so one helper process is started inside one
 * (`overlay-diff-main.ts` under `overlayLaunchArgv`) and runs the very `captureDiff` a worktree
 * sandbox gets, over the merged tree, with the listing limited to what the upper layer names.
 * Same code, same bytes: test/workers/verification/overlay-diff.test.ts runs both backends over
 * generated changes and requires the same patch, digest, names and tree. One node start-up
 * (~50 ms) and one mount per diff, whatever the size of the tree.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { ChangedFileSchema, ScopeViolationSchema } from '../../shared/contracts/receipt.js';
import { UhError } from '../../shared/errors.js';
import { spawnGroup } from '../../shared/process/spawn-group.js';
import { overlayLaunchArgv, type OverlayLayers } from '../sandbox/overlay-mount.js';
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
 * The helper of uh's installation: `dist/bundle/overlay-helper.cjs` (scripts/bundle.mjs: one file
 * to load), else the compiled module `dist/src/workers/verification/overlay-diff-main.js`.
 */
export function overlayDiffMain(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const bundled = join(dir, 'dist', 'bundle', 'overlay-helper.cjs');
    const built = join(dir, 'dist', 'src', 'workers', 'verification', 'overlay-diff-main.js');
    if (existsSync(join(dir, 'package.json'))) return existsSync(bundled) ? bundled : built;
    const up = dirname(dir);
    if (up === dir) return built;
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
export async function overlayTreeWork(
  request: Omit<TreeWorkRequest, 'workDir'>,
  run: OverlayDiffRun,
): Promise<TreeWorkResult> {
  const tree: TreeWorkRequest = { ...request, workDir: run.layers.mountPoint };
  return TreeWorkResultSchema.parse(await runHelper({ tree, views: viewsOf(run.layers) }, run));
}

function viewsOf(layers: OverlayLayers): OverlayDiffRequest['views'] {
  return { upper: layers.upper, lower: layers.lower, merged: layers.mountPoint };
}

/** Start the helper in the sandbox's namespace with `payload` on stdin; its JSON answer. */
async function runHelper(payload: unknown, run: OverlayDiffRun): Promise<unknown> {
  const argv = overlayLaunchArgv(run.unshare, run.layers, [process.execPath, overlayDiffMain()]);
  const child = spawnGroup({
    argv,
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
    stdin: { text: JSON.stringify(payload) },
    stdout: 'pipe',
    stderr: 'pipe',
    timeoutMs: run.timeoutMs,
    killGraceMs: 2000,
    ...(run.signal ? { signal: run.signal } : {}),
  });
  const out: Buffer[] = [];
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => (err = `${err}${chunk.toString('utf8')}`.slice(-2000)));
  const exit = await child.result;
  if (exit.exitCode !== 0 || exit.timedOut || exit.aborted) {
    const why = exit.timedOut ? 'timed out' : exit.aborted ? 'was aborted' : `exited ${exit.exitCode}`;
    throw new UhError('sandbox', `the overlay helper ${why}: ${err.trim().slice(-500)}`, {
      hint: 'run `uh doctor`: it says whether this host mounts overlays in a user namespace',
    });
  }
  return JSON.parse(Buffer.concat(out).toString('utf8'));
}
