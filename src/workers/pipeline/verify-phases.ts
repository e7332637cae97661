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
import { readReward, writeHiddenVerifier } from '../../operation/hidden-verifier.js';
import { HIDDEN_CHECK } from '../../shared/contracts/receipt.js';
import { makeDir } from '../../shared/fs/make-dir.js';
import { checkScope, type ScopeViolation } from '../verification/scope-check.js';
import { restoreGitLink } from '../sandbox/git-link.js';
import { removeEmptyDirs, stripIgnored, type Stripped } from '../verification/strip-ignored.js';
import { walkTree } from '../verification/tree-violations.js';
import { phaseSpawn } from './isolation-phase.js';
import { cancelReason, setState, timed, type OperationRun } from './operation-run.js';
import { closePhaseCgroup, cgroupHit, limitOutcome, measureWorktree, openPhaseCgroup } from './limits-phase.js';
import { watchedSpawn, watchLimits, type LimitHit } from './limits-watch.js';
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
  // The worktree's `.git` is uh's before anything reads it; any other `.git` is a nested repository,
  // and a name git refuses or a path past the bounds is a violation by name (never silently left out).
  const replaced = restoreGitLink(sandbox);
  const { violations: walked, emptyDirs } = walkTree(sandbox.path, run.settings.sandbox.paths);
  const got = await boundedDiff(run, sandbox, { excluded: walked.map((v) => v.path), emptyDirs });
  if (got === null) return;
  const { ignored, diff } = got;
  run.diff = diff;
  run.events.append('diff.captured', {
    files: diff.changed.length,
    bytes: diff.bytes,
    digest: diff.digest,
    head_commit: diff.headCommit,
    ...(diff.truncated ? { truncated: true, bytes_total: diff.bytesTotal, cap_bytes: diff.capBytes } : {}),
    ...(replaced === null ? {} : { git_link_restored: replaced }),
    ...(ignored.removed.length + ignored.kept.length === 0
      ? {}
      : {
          ignored_removed: ignored.removed.slice(0, 100),
          ignored_removed_count: ignored.removed.length,
          ignored_kept: ignored.kept.length,
        }),
  });
  const under = (v: ScopeViolation, f: ScopeViolation) => v.path === f.path || v.path.startsWith(`${f.path}/`);
  const flagged = [...diff.flagged, ...walked.filter((v) => !diff.flagged.some((f) => under(v, f)))];
  run.violations = [...checkScope(diff.changed, prepared.mission.scope), ...flagged];
  run.events.append('scope.checked', { ok: run.violations.length === 0, violations: run.violations });
}

/**
 * The diff under the mission's deadline and the operation's cancel (`diff-deadline.ts`); null when
 * either stopped it (`run.failure` says why, unless the runtime's own outcome already does).
 */
async function boundedDiff(
  run: OperationRun,
  sandbox: Sandbox,
  tree: { excluded: string[]; emptyDirs: string[] },
): Promise<{ ignored: Stripped; diff: DiffCapture } | null> {
  const { prepared, settings } = run;
  const completed = run.failure === null && run.folded.outcome.status === 'completed';
  // After a runtime that did not complete (a cancel among them) the diff records what it left.
  const bound = diffBound(run.deadlineMs, completed, completed ? run.options.signal : undefined);
  const factsDir = baseFactsDir(settings.cacheDir);
  try {
    // The checks run on exactly the diff's tree: the agent's ignored files go (unless kept, then staged).
    return await timed(run, 'diff', async () => {
      const keep = prepared.mission.sandbox.keep_ignored ?? [];
      const at = { workDir: sandbox.path, baseCommit: prepared.baseCommit, scratchDir: run.dir, factsDir };
      const listInProcess = gitPathOf(run.settings).listIgnored;
      const input = { ...at, keep, excluded: tree.excluded, listInProcess };
      const ignored = await stripIgnored(input, { signal: bound.signal });
      removeEmptyDirs(sandbox.path, tree.emptyDirs);
      const diff = await captureDiff(sandbox.path, prepared.baseCommit, join(run.dir, 'diff.patch'), run.dir, {
        baseFactsDir: factsDir,
        git: gitPathOf(settings),
        keptIgnored: ignored.kept,
        excluded: tree.excluded,
        capBytes: settings.diff.capBytes,
        signal: bound.signal,
      });
      return { ignored, diff };
    });
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
  if (status !== 'completed' || run.violations.length > 0) return;
  if (mission.verification.length > 0) await declaredChecks(run, sandbox);
  if (run.prepared.hiddenVerifier && !cancelReason(run)) await hiddenVerifierPhase(run, sandbox);
}

async function declaredChecks(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { mission } = run.prepared;
  const { signal } = run.options;
  restoreGitLink(sandbox); // the checks run on uh's `.git`, whatever a previous phase left
  // The checks are the agent's code too: a fresh cgroup of their own, and the watcher stops the one
  // that reaches a limit.
  const cgroup = openPhaseCgroup(run.limits, 'checks', mission.operation_id);
  const phase = phaseSpawn(run, sandbox, { writable: [], checks: true }, cgroup);
  const spawned: SpawnedGroup[] = [];
  let closed: LimitHit | null;
  const watch = watchLimits({
    limits: run.limits.values,
    worktree: sandbox.path,
    isolated: phase.isolated,
    onHit: (hit) => {
      run.limits.hit ??= hit;
      for (const child of spawned) child.terminate();
    },
    ...(cgroup ? { kernel: () => cgroupHit(run.limits, cgroup) } : {}),
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
    closed = await closePhaseCgroup(run.limits, cgroup);
  }
  const hit = watch.hit() ?? closed;
  if (hit) {
    run.limits.hit ??= hit;
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

/**
 * The hidden verifier, after the agent finished and the diff was taken: its files are written
 * next to the operation's files (never into the sandbox, so never in the diff and never seen by
 * the agent), `test.sh` runs with the sandbox as its working directory and `$TEST_DIR` /
 * `$UH_TESTS_DIR` naming the tests, `$UH_VERIFIER_LOGS_DIR` where it writes `reward.txt` or
 * `reward.json`. It passes when it exits 0 and its reward (if any) is 1.
 */
async function hiddenVerifierPhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const bundle = run.prepared.hiddenVerifier;
  const hidden = run.prepared.mission.verification_hidden;
  if (!bundle || !hidden) return;
  const tests = join(run.dir, 'verifier', 'tests');
  const logs = join(run.dir, 'verifier', 'logs');
  writeHiddenVerifier(bundle, tests);
  makeDir(logs);
  restoreGitLink(sandbox);
  // The task's own verifier, in a cgroup of its own too: nothing it starts outlives it.
  const cgroup = openPhaseCgroup(run.limits, 'verifier', run.prepared.mission.operation_id);
  const phase = phaseSpawn(run, sandbox, { writable: [logs], readable: [tests], checks: true }, cgroup);
  const { signal } = run.options;
  const [result] = await timed(run, 'hidden_verifier', () =>
    runChecks({
      checks: [{ name: HIDDEN_CHECK, argv: ['bash', join(tests, 'test.sh')], timeout_seconds: hidden.timeout_seconds }],
      workDir: sandbox.path,
      logDir: run.dir,
      env: { ...run.checkEnv, TEST_DIR: tests, UH_TESTS_DIR: tests, UH_VERIFIER_LOGS_DIR: logs },
      secrets: run.secrets,
      spawn: phase.spawn,
      ...(signal ? { signal } : {}),
    }),
  ).finally(() => closePhaseCgroup(run.limits, cgroup));
  if (!result) return;
  run.reward = readReward(logs);
  const passed = result.passed && (run.reward === null || run.reward >= 1);
  const checked = { ...result, passed };
  run.checks = [...run.checks, checked];
  const { output_head: _head, output_tail: tail, ...r } = checked;
  run.events.append('verification.check', { ...r, output_tail: tail.slice(-1024), reward: run.reward });
}
