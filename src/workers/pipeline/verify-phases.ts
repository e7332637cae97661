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
import { restoreGitLink } from '../sandbox/git-link.js';
import { removeEmptyDirs, stripIgnored } from '../verification/strip-ignored.js';
import { walkTree } from '../verification/tree-violations.js';
import { phaseSpawn } from './isolation-phase.js';
import { cancelReason, setState, timed, type OperationRun } from './operation-run.js';

export async function diffPhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  const { folded, prepared } = run;
  await setState(run, 'verifying', {
    session_id: folded.session_id,
    thread_id: folded.thread_id,
    turn_id: folded.turn_id,
  });
  // The worktree's `.git` is uh's before anything reads it; any other `.git` is a nested repository,
  // and a name git refuses or a path past the bounds is a violation by name (never silently left out).
  const replaced = restoreGitLink(sandbox);
  const { violations: walked, emptyDirs } = walkTree(sandbox.path, run.settings.sandbox.paths);
  const excluded = walked.map((v) => v.path);
  const factsDir = baseFactsDir(run.settings.cacheDir);
  // The checks run on exactly the diff's tree: the agent's ignored files go (unless kept, then staged).
  const { ignored, diff } = await timed(run, 'diff', async () => {
    const keep = prepared.mission.sandbox.keep_ignored ?? [];
    const at = { workDir: sandbox.path, baseCommit: prepared.baseCommit, scratchDir: run.dir, factsDir };
    const ignored = await stripIgnored({ ...at, keep, excluded });
    removeEmptyDirs(sandbox.path, emptyDirs);
    const diff = await captureDiff(sandbox.path, prepared.baseCommit, join(run.dir, 'diff.patch'), run.dir, {
      baseFactsDir: factsDir,
      git: gitPathOf(run.settings),
      keptIgnored: ignored.kept,
      excluded,
    });
    return { ignored, diff };
  });
  run.diff = diff;
  run.events.append('diff.captured', {
    files: diff.changed.length,
    bytes: diff.bytes,
    digest: diff.digest,
    head_commit: diff.headCommit,
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
