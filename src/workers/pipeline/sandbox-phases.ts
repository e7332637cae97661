/**
 * The sandbox at both ends of the pipeline: taken first (an overlay over the shared base checkout
 * where `UH_SANDBOX_BACKEND` and the host allow, sandbox-backend.ts; else from the warm pool, reset
 * to the base commit, else a fresh checkout of the mirror at it; writes `run.sandbox`,
 * `sandbox_path`), and
 * kept, returned clean to the pool, or removed last by the retention phase, once per operation
 * whatever its end. A kept (retained) sandbox is never pooled.
 */
import { errorMessage } from '../../shared/errors.js';
import { acquirePooled, releaseToPool } from '../sandbox/sandbox-pool.js';
import { createSandbox, removeSandbox, retainSandbox, type Sandbox } from '../sandbox/worktree.js';
import { chooseSandboxBackend } from '../sandbox/sandbox-backend.js';
import { createOverlaySandbox, isOverlaySandbox, removeOverlaySandbox } from '../sandbox/overlay-sandbox.js';
import { setState, timed, type OperationRun } from './operation-run.js';

export async function sandboxPhase(run: OperationRun): Promise<Sandbox> {
  const { prepared, settings } = run;
  const id = prepared.mission.operation_id;
  const { cacheDir } = settings;
  const pool = settings.sandbox.pool.size > 0 ? settings.sandbox.pool : null;
  const onDiscard = (path: string, reason: string) => run.logger.warn({ path, reason }, 'warm sandbox discarded');
  const host = { isolated: run.isolation.use !== null, cacheDir, path: run.env.PATH };
  const choice = chooseSandboxBackend(settings.sandbox.backend, host);
  const sandbox = await timed(run, 'sandbox', async () => {
    if (choice.kind === 'overlay')
      return createOverlaySandbox(
        cacheDir,
        prepared.mirror,
        prepared.baseCommit,
        id,
        run.startedAt,
        {},
        choice.unshare,
      );
    const warm = pool
      ? await acquirePooled(cacheDir, prepared.mirror, prepared.baseCommit, id, run.startedAt, pool, onDiscard)
      : null;
    return warm ?? createSandbox(cacheDir, prepared.mirror, prepared.baseCommit, id, run.startedAt);
  });
  run.sandbox = sandbox;
  await setState(run, 'running', { sandbox_path: sandbox.path });
  run.events.append('sandbox.created', {
    path: sandbox.path,
    base_commit: prepared.baseCommit,
    backend: sandbox.backend ?? 'git-worktree',
    warm: sandbox.warm,
    ...(isOverlaySandbox(sandbox) ? { base_fresh: sandbox.base.fresh } : {}),
    ...(choice.kind === 'worktree' && choice.reason ? { overlay_unavailable: choice.reason } : {}),
  });
  return sandbox;
}

/**
 * Keep the sandbox until `sandboxKeepHours` from now (the sweep collects it then); or return it
 * clean to the warm pool (`sandbox.removed` with `pooled: true`: its path is gone either way);
 * or remove it now.
 */
export async function retentionPhase(run: OperationRun, keep: boolean): Promise<void> {
  const { sandbox, settings } = run;
  const { cacheDir } = settings;
  if (!sandbox) return;
  const id = run.prepared.mission.operation_id;
  const overlay = isOverlaySandbox(sandbox) ? sandbox : null;
  if (keep) {
    const until = new Date(run.now().getTime() + settings.sandbox.keepHours * 3600_000);
    const made = overlay ? { backend: 'overlay' as const, base: overlay.base.name } : {};
    retainSandbox(cacheDir, sandbox, id, until, run.startedAt, made);
    run.events.append('sandbox.kept', { path: sandbox.path, until: until.toISOString() });
    return;
  }
  // An overlay sandbox is never pooled: its base is the overlay backend's warm state.
  if (!overlay && settings.sandbox.pool.size > 0) {
    // A tracked file the diff saw changed needs the reset anyway: no walk to find that out again.
    // Without the git fast path (`UH_GIT_FAST_PATH=0`) git's `read-tree` resets every sandbox.
    const trackedChanged = !settings.gitFastPath || (run.diff?.changed.some((f) => f.status !== 'added') ?? false);
    const notPooled = await releaseToPool(
      cacheDir,
      sandbox,
      id,
      settings.sandbox.pool,
      run.now(),
      {},
      { trackedChanged },
    );
    if (notPooled === null) {
      run.events.append('sandbox.removed', { path: sandbox.path, pooled: true });
      return;
    }
    run.logger.info({ path: sandbox.path, reason: notPooled }, 'sandbox not pooled; removing it');
  }
  const record = { name: sandbox.name, path: sandbox.path, mirror: sandbox.mirror.path };
  const removal = overlay
    ? removeOverlaySandbox(cacheDir, { ...record, base: overlay.base.name })
    : removeSandbox(cacheDir, record);
  await removal.catch((error) =>
    run.logger.warn({ err: errorMessage(error) }, 'sandbox removal failed; the next sweep collects it'),
  );
  run.events.append('sandbox.removed', { path: sandbox.path, pooled: false });
}
