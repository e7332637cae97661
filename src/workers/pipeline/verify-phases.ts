/**
 * The verification phases over the sandbox after the runtime: the diff against the base commit,
 * inside the mission's deadline (`diff-deadline.ts`), and the scope check (writes `run.diff`,
 * `run.violations`, state `verifying`, and `run.failure` when the deadline or a cancel stops the
 * diff), then the mission's checks when the runtime completed within scope (writes `run.checks`,
 * and `run.failure` when a cancel lands during them).
 */
import { join } from 'node:path';
import type { Sandbox } from '../sandbox/worktree.js';
import { gitPathOf } from '../git-path.js';
import { baseFactsDir, captureDiff, type DiffCapture } from '../verification/capture-diff.js';
import { diffBound, diffTimeoutOutcome } from './diff-deadline.js';
import { runChecks } from '../verification/run-checks.js';
import { checkScope, type ScopeViolation } from '../verification/scope-check.js';
import { restoreGitLink, strayGitEntries } from '../sandbox/git-link.js';
import { phaseSpawn } from './isolation-phase.js';
import { cancelReason, setState, timed, type OperationRun } from './operation-run.js';

export async function diffPhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { folded, prepared } = run;
  await setState(run, 'verifying', {
    session_id: folded.session_id,
    thread_id: folded.thread_id,
    turn_id: folded.turn_id,
  });
  // The worktree's `.git` is uh's before anything reads it; any other `.git` is a nested repository.
  const replaced = restoreGitLink(sandbox);
  const stray = strayGitEntries(sandbox.path).map((path): ScopeViolation => ({ path, reason: 'nested_repository' }));
  const diff = await boundedDiff(run, sandbox);
  if (diff === null) return;
  run.diff = diff;
  run.events.append('diff.captured', {
    files: diff.changed.length,
    bytes: diff.bytes,
    digest: diff.digest,
    head_commit: diff.headCommit,
    ...(diff.truncated ? { truncated: true, bytes_total: diff.bytesTotal, cap_bytes: diff.capBytes } : {}),
    ...(replaced === null ? {} : { git_link_restored: replaced }),
  });
  const flagged = [...diff.flagged, ...stray.filter((v) => !diff.flagged.some((f) => v.path.startsWith(`${f.path}/`)))];
  run.violations = [...checkScope(diff.changed, prepared.mission.scope), ...flagged];
  run.events.append('scope.checked', { ok: run.violations.length === 0, violations: run.violations });
}

/**
 * The diff under the mission's deadline and the operation's cancel (`diff-deadline.ts`); null when
 * either stopped it (`run.failure` says why, unless the runtime's own outcome already does).
 */
async function boundedDiff(run: OperationRun, sandbox: Sandbox): Promise<DiffCapture | null> {
  const { prepared, settings } = run;
  const completed = run.failure === null && run.folded.outcome.status === 'completed';
  // After a runtime that did not complete (a cancel among them) the diff records what it left.
  const bound = diffBound(run.deadlineMs, completed, completed ? run.options.signal : undefined);
  try {
    return await timed(run, 'diff', () =>
      captureDiff(sandbox.path, prepared.baseCommit, join(run.dir, 'diff.patch'), run.dir, {
        baseFactsDir: baseFactsDir(settings.cacheDir),
        git: gitPathOf(settings),
        capBytes: settings.diff.capBytes,
        signal: bound.signal,
      }),
    );
  } catch (error) {
    const cancelled = completed ? cancelReason(run) : null;
    if (!cancelled && !bound.expired()) throw error;
    run.events.append('diff.stopped', { reason: cancelled ? 'cancel' : 'deadline', allowed_ms: bound.allowedMs });
    if (cancelled)
      run.failure = {
        status: 'cancelled',
        raw: 'cancel',
        message: `${cancelled.message} (during the diff)`,
        timed_out: false,
      };
    else if (completed) run.failure = diffTimeoutOutcome(prepared.mission.timeout_seconds, bound.allowedMs ?? 0);
    return null;
  } finally {
    bound.dispose();
  }
}

export async function checksPhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { mission } = run.prepared;
  const status = run.failure?.status ?? run.folded.outcome.status;
  if (status !== 'completed' || run.violations.length > 0 || mission.verification.length === 0) return;
  const { signal } = run.options;
  restoreGitLink(sandbox); // the checks run on uh's `.git`, whatever a previous phase left
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
