/**
 * The sandbox at both ends of the pipeline: created first (a worktree of the mirror at the base
 * commit; writes `run.sandbox`, `sandbox_path`), and kept or removed last by the retention
 * phase, once per operation whatever its end.
 */
import { errorMessage } from '../../shared/errors.js';
import { createSandbox, removeSandbox, retainSandbox, type Sandbox } from '../sandbox/worktree.js';
import { setState, timed, type OperationRun } from './operation-run.js';

export async function sandboxPhase(run: OperationRun): Promise<Sandbox> {
  const { prepared, options } = run;
  const id = prepared.mission.operation_id;
  const sandbox = await timed(run, 'sandbox', () => createSandbox(options.cacheDir, prepared.mirror, prepared.baseCommit, id, run.startedAt));
  run.sandbox = sandbox;
  await setState(run, 'running', { sandbox_path: sandbox.path });
  run.events.append('sandbox.created', { path: sandbox.path, base_commit: prepared.baseCommit, backend: 'git-worktree' });
  return sandbox;
}

/** Keep the sandbox until `sandboxKeepHours` from now (the sweep collects it then), or remove it now. */
export async function retentionPhase(run: OperationRun, keep: boolean): Promise<void> {
  const { sandbox, options } = run;
  if (!sandbox) return;
  const id = run.prepared.mission.operation_id;
  if (keep) {
    const until = new Date(run.now().getTime() + (options.sandboxKeepHours ?? 24) * 3600_000);
    retainSandbox(options.cacheDir, sandbox, id, until, run.startedAt);
    run.events.append('sandbox.kept', { path: sandbox.path, until: until.toISOString() });
    return;
  }
  await removeSandbox(options.cacheDir, { name: sandbox.name, path: sandbox.path, mirror: sandbox.mirror.path }).catch((error) =>
    run.logger.warn({ err: errorMessage(error) }, 'sandbox removal failed; the next sweep collects it'),
  );
  run.events.append('sandbox.removed', { path: sandbox.path });
}
