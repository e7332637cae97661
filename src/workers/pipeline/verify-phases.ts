/**
 * The verification phases over the sandbox after the runtime: the diff against the base commit
 * and the scope check (writes `run.diff`, `run.violations`, state `verifying`), then the
 * mission's checks when the runtime completed within scope (writes `run.checks`, and
 * `run.failure` when a cancel lands during them).
 */
import { join } from 'node:path';
import type { Sandbox } from '../sandbox/worktree.js';
import { gitPathOf } from '../git-path.js';
import { baseFactsDir, captureDiff } from '../verification/capture-diff.js';
import { runChecks } from '../verification/run-checks.js';
import { checkScope } from '../verification/scope-check.js';
import { phaseSpawn } from './isolation-phase.js';
import { cancelReason, setState, timed, type OperationRun } from './operation-run.js';

export async function diffPhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { folded, prepared } = run;
  await setState(run, 'verifying', {
    session_id: folded.session_id,
    thread_id: folded.thread_id,
    turn_id: folded.turn_id,
  });
  const diff = await timed(run, 'diff', () =>
    captureDiff(sandbox.path, prepared.baseCommit, join(run.dir, 'diff.patch'), run.dir, {
      baseFactsDir: baseFactsDir(run.settings.cacheDir),
      git: gitPathOf(run.settings),
    }),
  );
  run.diff = diff;
  run.events.append('diff.captured', {
    files: diff.changed.length,
    bytes: diff.bytes,
    digest: diff.digest,
    head_commit: diff.headCommit,
  });
  run.violations = [...checkScope(diff.changed, prepared.mission.scope), ...diff.flagged];
  run.events.append('scope.checked', { ok: run.violations.length === 0, violations: run.violations });
}

export async function checksPhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { mission } = run.prepared;
  const status = run.failure?.status ?? run.folded.outcome.status;
  if (status !== 'completed' || run.violations.length > 0 || mission.verification.length === 0) return;
  const { signal } = run.options;
  const phase = phaseSpawn(run, sandbox, { writable: [], checks: true });
  run.checks = await timed(run, 'checks', () =>
    runChecks({
      checks: mission.verification,
      workDir: sandbox.path,
      logDir: run.dir,
      env: run.checkEnv,
      secrets: run.secrets,
      spawn: phase.spawn,
      ...(signal ? { signal } : {}),
      onResult: ({ output_head: _head, output_tail: tail, ...r }) =>
        run.events.append('verification.check', { ...r, output_tail: tail.slice(-1024) }),
    }),
  );
  const reason = cancelReason(run);
  if (reason)
    run.failure = {
      status: 'cancelled',
      raw: 'cancel',
      message: `${reason.message} (during verification)`,
      timed_out: false,
    };
}
