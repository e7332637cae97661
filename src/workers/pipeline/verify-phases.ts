/**
 * The verification phases over the sandbox after the runtime: the diff against the base commit,
 * inside the mission's deadline (`diff-deadline.ts`), and the scope check (writes `run.diff`,
 * `run.violations`, state `verifying`, and `run.failure` when the deadline or a cancel stops the
 * diff), then the mission's checks when the runtime completed within scope (writes `run.checks`,
 * and `run.failure` when a cancel lands during them).
 */
import { join } from 'node:path';
import type { Sandbox } from '../sandbox/worktree.js';
import { baseFactsDir } from '../verification/capture-diff.js';
import { diffBound, diffTimeoutOutcome } from './diff-deadline.js';
import { runChecks } from '../verification/run-checks.js';
import { readReward, writeHiddenVerifier } from '../../operation/hidden-verifier.js';
import { HIDDEN_CHECK } from '../../shared/contracts/receipt.js';
import { makeDir } from '../../shared/fs/make-dir.js';
import { checkScope, type ScopeViolation } from '../verification/scope-check.js';
import { restoreGitLink } from '../sandbox/git-link.js';
import { sandboxPaths } from '../sandbox/worktree.js';
import { treeWork, type TreeWorkRequest } from '../verification/tree-work.js';
import {
  overlayTreeWork,
  startOverlayHelper,
  type OverlayHelper,
  type OverlayTreeWorkResult,
} from '../verification/overlay-diff.js';
import { isOverlaySandbox } from '../sandbox/overlay-sandbox.js';
import type { WorktreeUsage } from '../sandbox/worktree-usage.js';
import { phaseSpawn } from './isolation-phase.js';
import { cancelReason, setState, timed, type OperationRun } from './operation-run.js';
import {
  closePhaseCgroup,
  cgroupHit,
  limitOutcome,
  openPhaseCgroup,
  recordWorktree,
  writesOf,
} from './limits-phase.js';
import { watchedSpawn, watchLimits, type LimitHit } from './limits-watch.js';
import type { SpawnedGroup } from '../../shared/process/spawn-group.js';

/** The overlay helper's code cache, beside the CLI's (bin/uh.js). */
const codeCacheDir = (run: OperationRun): string => join(run.settings.cacheDir, 'code-cache');

/** The overlay helper's own bound, behind the deadline's signal (which stops it first). */
const HELPER_TIMEOUT_MS = 6 * 3600_000;

/**
 * The tree step's helper of an overlay sandbox, started now (before the agent) so that its start-up
 * is over when a short agent ends (`startOverlayHelper`: it waits `HELPER_WAIT_MS` at most); null
 * for a worktree sandbox. The caller closes it.
 */
export function startTreeHelper(run: OperationRun, sandbox: Sandbox): OverlayHelper | null {
  if (!isOverlaySandbox(sandbox)) return null;
  return startOverlayHelper({
    unshare: sandbox.unshare,
    timeoutMs: HELPER_TIMEOUT_MS,
    codeCacheDir: codeCacheDir(run),
  });
}

export async function diffPhase(
  run: OperationRun,
  sandbox: Sandbox,
  helper: OverlayHelper | null = null,
): Promise<void> {
  const { folded, prepared } = run;
  await setState(run, 'verifying', {
    session_id: folded.session_id,
    thread_id: folded.thread_id,
    turn_id: folded.turn_id,
  });
  const got = await boundedTreeWork(run, sandbox, helper);
  if (got === null) return;
  const { usage, replaced, walked, ignored, diff, helperFailure } = got;
  // Over its worktree bounds, the tree is never diffed: the run fails naming the bound.
  if (overWorktree(run, usage) || diff === null) return;
  run.diff = diff;
  run.events.append('diff.captured', {
    files: diff.changed.length,
    bytes: diff.bytes,
    digest: diff.digest,
    head_commit: diff.headCommit,
    ...(diff.truncated ? { truncated: true, bytes_total: diff.bytesTotal, cap_bytes: diff.capBytes } : {}),
    ...(replaced === null ? {} : { git_link_restored: replaced }),
    ...(helperFailure === undefined ? {} : { helper_replaced: helperFailure }),
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

/** The worktree's measure against its bounds (`limits-phase.ts`); true when over (`run.failure` says so). */
function overWorktree(run: OperationRun, usage: WorktreeUsage): boolean {
  const over = recordWorktree(run.limits, usage);
  if (over === null) return false;
  run.failure = limitOutcome(over, run.limits.values);
  if (run.folded.outcome.raw !== run.failure.raw) run.events.append('limits.exceeded', { ...over });
  return true;
}

/**
 * The tree step (`tree-work.ts`: measure, `.git` restore, walk, ignored files, diff) under the
 * mission's deadline and the operation's cancel (`diff-deadline.ts`), in uh's process or, for an
 * overlay sandbox, in its helper inside the sandbox's namespace; null when the deadline or the
 * cancel stopped it (`run.failure` says why, unless the runtime's own outcome already does).
 */
async function boundedTreeWork(
  run: OperationRun,
  sandbox: Sandbox,
  helper: OverlayHelper | null,
): Promise<OverlayTreeWorkResult | null> {
  const { prepared, settings } = run;
  const completed = run.failure === null && run.folded.outcome.status === 'completed';
  // After a runtime that did not complete (a cancel among them) the diff records what it left.
  const bound = diffBound(run.deadlineMs, completed, completed ? run.options.signal : undefined);
  const request: TreeWorkRequest = {
    workDir: sandbox.path,
    mirrorPath: sandbox.mirror.path,
    baseCommit: prepared.baseCommit,
    patchPath: join(run.dir, 'diff.patch'),
    scratchDir: run.dir,
    factsDir: baseFactsDir(settings.cacheDir),
    gitFastPath: settings.gitFastPath,
    capBytes: settings.diff.capBytes,
    keep: [...(prepared.mission.sandbox.keep_ignored ?? [])],
    pathBounds: { ...settings.sandbox.paths },
    worktreeBounds: { bytes: run.limits.values.worktree_bytes, files: run.limits.values.worktree_files },
  };
  try {
    return await timed(run, 'diff', () =>
      isOverlaySandbox(sandbox)
        ? overlayTreeWork(request, {
            unshare: sandbox.unshare,
            layers: sandbox.layers,
            timeoutMs: HELPER_TIMEOUT_MS,
            signal: bound.signal,
            codeCacheDir: codeCacheDir(run),
            ...(helper ? { started: helper } : {}),
          })
        : treeWork(request, { signal: bound.signal }),
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
  if (status !== 'completed' || run.violations.length > 0) return;
  if (mission.verification.length > 0) await declaredChecks(run, sandbox);
  if (run.prepared.hiddenVerifier && !cancelReason(run)) await hiddenVerifierPhase(run, sandbox);
}

async function declaredChecks(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { mission } = run.prepared;
  const { signal } = run.options;
  restoreSandboxGitLink(sandbox); // the checks run on uh's `.git`, whatever a previous phase left
  // The checks are the agent's code too: a fresh cgroup of their own, and the watcher stops the one
  // that reaches a limit.
  const cgroup = openPhaseCgroup(run.limits, 'checks', mission.operation_id);
  const phase = phaseSpawn(run, sandbox, { writable: [], checks: true }, cgroup);
  const spawned: SpawnedGroup[] = [];
  let closed: LimitHit | null;
  const watch = watchLimits({
    limits: run.limits.values,
    worktree: writesOf(sandbox),
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
  restoreSandboxGitLink(sandbox);
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

/**
 * uh's `.git` back in the sandbox before a phase that runs on it. Between phases nothing has an
 * overlay sandbox mounted, so its `.git` is restored in the upper layer itself (the base holds
 * none: the merged tree's `.git` is the upper layer's).
 */
function restoreSandboxGitLink(sandbox: Sandbox): void {
  if (!isOverlaySandbox(sandbox)) return void restoreGitLink(sandbox);
  restoreGitLink(sandbox, { ...sandboxPaths(sandbox.path), agentGitDir: join(sandbox.layers.upper, '.git') });
}
