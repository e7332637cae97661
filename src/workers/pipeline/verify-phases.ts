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
import { checkScope, type ScopeViolation } from '../verification/scope-check.js';
import { restoreGitLink, strayGitEntries } from '../sandbox/git-link.js';
import { phaseSpawn } from './isolation-phase.js';
import { cancelReason, setState, timed, type OperationRun } from './operation-run.js';
import { limitOutcome, measureWorktree } from './limits-phase.js';
import { watchedSpawn, watchLimits } from './limits-watch.js';
import type { SpawnedGroup } from '../../shared/process/spawn-group.js';

export async function diffPhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { folded, prepared } = run;
  await setState(run, 'verifying', {
    session_id: folded.session_id,
    thread_id: folded.thread_id,
    turn_id: folded.turn_id,
  });
  // Over its worktree bounds, the tree is never diffed: the run fails naming the bound.
  const over = measureWorktree(run.limits, sandbox);
  if (over !== null) {
    run.failure = limitOutcome(over, run.limits.values);
    if (run.folded.outcome.raw !== run.failure.raw) run.events.append('limits.exceeded', { ...over });
    return;
  }
  // The worktree's `.git` is uh's before anything reads it; any other `.git` is a nested repository.
  const replaced = restoreGitLink(sandbox);
  const stray = strayGitEntries(sandbox.path).map((path): ScopeViolation => ({ path, reason: 'nested_repository' }));
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
    ...(replaced === null ? {} : { git_link_restored: replaced }),
  });
  const flagged = [...diff.flagged, ...stray.filter((v) => !diff.flagged.some((f) => v.path.startsWith(`${f.path}/`)))];
  run.violations = [...checkScope(diff.changed, prepared.mission.scope), ...flagged];
  run.events.append('scope.checked', { ok: run.violations.length === 0, violations: run.violations });
}

export async function checksPhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { mission } = run.prepared;
  const status = run.failure?.status ?? run.folded.outcome.status;
  if (status !== 'completed' || run.violations.length > 0 || mission.verification.length === 0) return;
  const { signal } = run.options;
  restoreGitLink(sandbox); // the checks run on uh's `.git`, whatever a previous phase left
  const phase = phaseSpawn(run, sandbox, { writable: [], checks: true });
  // The checks are the agent's code too: the watcher stops the one that reaches a limit.
  const spawned: SpawnedGroup[] = [];
  const watch = watchLimits({
    limits: run.limits.values,
    worktree: sandbox.path,
    isolated: phase.isolated,
    onHit: (hit) => {
      run.limits.hit ??= hit;
      for (const child of spawned) child.terminate();
    },
  });
  try {
    run.checks = await timed(run, 'checks', () =>
      runChecks({
        checks: mission.verification,
        workDir: sandbox.path,
        logDir: run.dir,
        env: run.checkEnv,
        secrets: run.secrets,
        spawn: watchedSpawn(phase.spawn, watch, spawned),
        ...(signal ? { signal } : {}),
        onResult: ({ output_head: _head, output_tail: tail, ...r }) =>
          run.events.append('verification.check', { ...r, output_tail: tail.slice(-1024) }),
      }),
    );
  } finally {
    watch.stop();
  }
  const hit = watch.hit();
  if (hit) {
    run.failure = limitOutcome(hit, run.limits.values);
    run.events.append('limits.exceeded', { ...hit, phase: 'checks' });
  }
  const reason = cancelReason(run);
  if (reason)
    run.failure = {
      status: 'cancelled',
      raw: 'cancel',
      message: `${reason.message} (during verification)`,
      timed_out: false,
    };
}
