/**
 * The runtime phase: start the adapter in the sandbox (unless the operation was cancelled first),
 * fold its guarded event stream, and write runtime-final.txt and runtime-result.yaml.
 * Writes `run.folded` (or `run.failure` for a cancel before start) and `runtime_started`.
 */
import { runtimeFetch } from '../../shared/transport/http-fetch.js';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { RuntimeResult } from '../../shared/contracts/runtime-result.js';
import { describeGroup, PROCESS_GROUPS_KEY, type ProcessGroup } from '../../shared/process/leftover-groups.js';
import type { SpawnGroup, SpawnGroupOptions } from '../../shared/process/spawn-group.js';
import { redact, redactString } from '../../shared/redact.js';
import { foldOne, initialFold, type FoldedRuntime } from '../../shared/runtime/fold-events.js';
import { guardTerminal } from '../../shared/runtime/guard-terminal.js';
import type { AbortReasonV1, RuntimeContextV1, RuntimeJournalV1 } from '../../shared/runtime/v1/index.js';
import { fileJournal } from '../../operation/file-journal.js';
import type { Sandbox } from '../sandbox/worktree.js';
import { phaseSpawn, type PhaseSpawn } from './isolation-phase.js';
import { bwrapProbeFile, cancelReason, setState, timed, type OperationRun } from './operation-run.js';
import { reprobeBwrap } from '../../shared/process/bwrap-probe.js';
import { reprobeOverlay } from '../sandbox/sandbox-backend.js';
import { isOverlaySandbox } from '../sandbox/overlay-sandbox.js';
import { agentStateSpawn, prepareAgentState, preparePersistentState, type AgentState } from './agent-state.js';
import { stderrTailLines, withOverlayHint, withStderrTail } from './stderr-tail.js';
import { monotonicMs } from '../../shared/clock.js';
import { watchedSpawn, watchLimits } from './limits-watch.js';
import { cgroupHit, closePhaseCgroup, limitOutcome, openPhaseCgroup, writesOf } from './limits-phase.js';
import type { MissionCgroup } from '../../shared/process/mission-cgroup.js';

export async function runtimePhase(run: OperationRun, sandbox: Sandbox): Promise<void> {
  if (!cancelReason(run)) await run.options.hooks?.beforeRuntime?.();
  // Checked again after beforeRuntime: a queue cancel can land while it persists "runtime started".
  const cancelled = cancelReason(run);
  const refused = run.isolation.use ? undefined : run.isolation.refuse;
  if (cancelled) {
    run.failure = { status: 'cancelled', raw: 'cancel', message: cancelled.message ?? 'cancelled', timed_out: false };
  } else if (run.secretRefusal) {
    const { message, hint } = run.secretRefusal;
    run.failure = { status: 'blocked', raw: 'secret_unavailable', message, hint, timed_out: false };
  } else if (refused) {
    run.failure = {
      status: 'blocked',
      raw: 'isolation_unavailable',
      message: refused.message,
      hint: refused.hint,
      timed_out: false,
    };
  } else {
    await setState(run, 'running', { runtime_started: true });
    run.folded = await timed(run, 'runtime', () => launchAndFold(run, sandbox));
  }
  run.folded.final_message = redactString(run.folded.final_message, run.secrets);
  writeFileSync(join(run.dir, 'runtime-final.txt'), run.folded.final_message);
}

/**
 * runtime-result.yaml, from the folded run (after runtimePhase). The pipeline writes it while the
 * diff's first git process runs (execute-operation.ts): YAML is the slowest file it writes.
 */
export function writeRuntimeResult(run: OperationRun): void {
  writeFileSync(join(run.dir, 'runtime-result.yaml'), toYaml(redact(toRuntimeResult(run), run.secrets)));
}

/** Abort on the mission timeout, the caller's cancel or `abort` (a limit reached), whichever comes first. */
function missionSignal(run: OperationRun): {
  signal: AbortSignal;
  abort: (reason: AbortReasonV1) => void;
  dispose: () => void;
} {
  const { mission } = run.prepared;
  const outer = run.options.signal;
  const controller = new AbortController();
  const timeoutMs = mission.timeout_seconds * 1000;
  run.deadlineMs = monotonicMs() + timeoutMs; // the diff phase gets what is left (diff-deadline.ts)
  const timer = setTimeout(
    () =>
      controller.abort({
        kind: 'timeout',
        message: `mission timed out after ${mission.timeout_seconds} s`,
        timeoutMs,
      } satisfies AbortReasonV1),
    timeoutMs,
  );
  const onCancel = () => controller.abort(outer?.reason ?? { kind: 'cancel', message: 'cancelled' });
  if (outer?.aborted) onCancel();
  else outer?.addEventListener('abort', onCancel, { once: true });
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    dispose: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onCancel);
    },
  };
}

/**
 * A spawn that journals every process group the runtime starts, so `uh mission recover` can end
 * the ones a dead uh process left behind.
 */
function journallingSpawn(spawn: SpawnGroup, journal: RuntimeJournalV1): SpawnGroup {
  const groups: ProcessGroup[] = [];
  return (spawnOptions) => {
    const child = spawn(spawnOptions);
    const group = child.pid === undefined ? null : describeGroup(child.pid);
    if (group) {
      groups.push(group);
      void journal.put({ [PROCESS_GROUPS_KEY]: [...groups] }).catch(() => undefined);
    }
    return child;
  };
}

function runtimeContext(run: OperationRun, sandbox: Sandbox, signal: AbortSignal, phase: PhaseSpawn): RuntimeContextV1 {
  const { options } = run;
  const { mission } = run.prepared;
  const journal = options.hooks?.journal ?? fileJournal(join(run.dir, 'runtime-journal.json'));
  return {
    workDir: sandbox.path,
    logDir: run.dir,
    signal,
    spawn: journallingSpawn(scrubbingSpawn(phase.spawn, run.secrets), journal),
    isolation: phase.isolated ? 'bwrap' : 'none',
    fetch: options.fetch ?? runtimeFetch,
    now: () => run.now().getTime(),
    env: run.env,
    journal,
    mission: { missionId: mission.mission_id, operationId: mission.operation_id, attempt: options.attempt ?? 1 },
  };
}

/**
 * A spawn whose output files never hold a secret: every file output of the runtime's processes
 * goes through a streaming redactor (a secret split across two writes included).
 */
function scrubbingSpawn(spawn: SpawnGroup, secrets: readonly string[]): SpawnGroup {
  const scrub = (spec: SpawnGroupOptions['stdout']): SpawnGroupOptions['stdout'] =>
    spec === undefined || typeof spec === 'string' ? spec : { ...spec, redact: [...(spec.redact ?? []), ...secrets] };
  return (options) => spawn({ ...options, stdout: scrub(options.stdout), stderr: scrub(options.stderr) });
}

/** Launch the adapter under the mission timeout; append each event as it happens and fold it. */
async function launchAndFold(run: OperationRun, sandbox: Sandbox): Promise<FoldedRuntime> {
  const { mission, runtime, prompt } = run.prepared;
  const { signal, abort, dispose } = missionSignal(run);
  const folded = initialFold();
  const toolIds = new Set<string>();
  const cgroup = openPhaseCgroup(run.limits, 'agent', mission.operation_id);
  const { phase, state } = runtimeSpawn(run, sandbox, cgroup);
  const stderrFiles: string[] = [];
  const watch = watchLimits({
    limits: run.limits.values,
    worktree: writesOf(sandbox),
    isolated: phase.isolated,
    onHit: (hit) => {
      run.limits.hit = hit;
      abort({ kind: 'cancel', message: limitOutcome(hit, run.limits.values).message });
    },
    ...(cgroup ? { kernel: () => cgroupHit(run.limits, cgroup) } : {}),
  });
  try {
    const plan = await runtime.adapter.prepare({
      config: runtime.config,
      prompt,
      workDir: sandbox.path,
      mission: { missionId: mission.mission_id, operationId: mission.operation_id },
    });
    const recording = { ...phase, spawn: watchedSpawn(recordingStderr(phase.spawn, stderrFiles), watch) };
    const session = runtime.adapter.launch(plan, runtimeContext(run, sandbox, signal, recording));
    for await (const event of guardTerminal(session.events)) {
      foldOne(folded, event, toolIds);
      run.events.append(event.type, event.data as Record<string, unknown>);
    }
  } finally {
    watch.stop();
    dispose();
    state?.dispose();
    // What the kernel refused since the last tick counts too; nothing of the phase outlives it.
    const closed = await closePhaseCgroup(run.limits, cgroup);
    run.limits.hit ??= closed;
  }
  const refusal = phase.refusal();
  if (run.limits.hit) {
    folded.outcome = limitOutcome(run.limits.hit, run.limits.values);
    run.events.append('limits.exceeded', { ...run.limits.hit });
    return folded;
  }
  if (refusal) {
    const { message, hint } = refusal;
    folded.outcome = { status: 'blocked', raw: 'isolation:hidden_path', message, hint, timed_out: false };
  } else {
    const tail = stderrTailLines(stderrFiles.at(-1) ?? '', run.secrets);
    folded.outcome = withStderrTail(folded.outcome, tail);
    if (isOverlaySandbox(sandbox)) folded.outcome = withOverlayHint(folded.outcome, tail);
  }
  if (phase.isolated && folded.outcome.status !== 'completed' && folded.outcome.status !== 'cancelled')
    blockedByHost(run, folded);
  return folded;
}

/**
 * The runtime's spawn: isolated with what the adapter declares, and under isolation the agent's
 * configured state dirs replaced by the operation's own writable copies, or for a `persistent`
 * declaration by the tenant's own on this worker (agent-state.ts).
 */
function runtimeSpawn(
  run: OperationRun,
  sandbox: Sandbox,
  cgroup: MissionCgroup | null,
): { phase: PhaseSpawn; state: AgentState | null } {
  const { runtime } = run.prepared;
  const declared = runtime.adapter.isolation?.(runtime.config, { env: run.env, logDir: run.dir }) ?? { writable: [] };
  const seeds = run.isolation.use ? (declared.state ?? {}) : {};
  const own = [run.settings.cacheDir, run.settings.stateDir];
  const owner = { runtime: runtime.runtimeId, tenant: run.options.tenant ?? run.settings.tenant };
  const persistent = declared.persistent === true;
  const state =
    Object.keys(seeds).length === 0
      ? null
      : persistent
        ? preparePersistentState(run.settings.stateDir, owner, seeds, own)
        : prepareAgentState(run.dir, seeds, own);
  const operation_id = run.prepared.mission.operation_id;
  for (const note of state?.notes ?? []) run.logger.warn({ operation_id }, `agent state: ${note}`);
  const writable = [...declared.writable, ...(state?.writable ?? [])];
  const phase = phaseSpawn(run, sandbox, { writable, readable: declared.readable ?? [] }, cgroup);
  return {
    phase: state ? { ...phase, spawn: agentStateSpawn(phase.spawn, seeds, state.env, persistent) } : phase,
    state,
  };
}

/** A spawn that remembers the stderr file of each child, for the why line. */
function recordingStderr(spawn: SpawnGroup, files: string[]): SpawnGroup {
  return (options) => {
    if (options.stderr !== undefined && typeof options.stderr === 'object') files.push(options.stderr.file);
    return spawn(options);
  };
}

/**
 * The probes that allowed bwrap and an overlay sandbox may be an hour old (`bwrap-probe.ts`,
 * `sandbox-backend.ts`): when an isolated run failed, probe again, and if the host can no longer
 * set up the sandbox, the run is blocked on the host, not failed by the agent.
 */
function blockedByHost(run: OperationRun, folded: FoldedRuntime): void {
  const bwrap = reprobeBwrap(run.env.PATH, bwrapProbeFile(run.settings.cacheDir));
  if (!bwrap.ok)
    return blockOn(folded, 'isolation:bwrap', `the sandbox could not be set up: ${bwrap.reason}`, BWRAP_HINT);
  if (run.sandbox === null || !isOverlaySandbox(run.sandbox)) return;
  const overlay = reprobeOverlay(run.settings.cacheDir, run.env.PATH);
  if (!overlay.ok)
    blockOn(folded, 'isolation:overlay', `the overlay sandbox could not be mounted: ${overlay.reason}`, OVERLAY_HINT);
}

const BWRAP_HINT =
  'allow unprivileged user namespaces again (or install bubblewrap); `uh doctor` shows the state; UH_ISOLATION=off runs unisolated';
const OVERLAY_HINT =
  'UH_SANDBOX_BACKEND=auto falls back to a worktree where overlays cannot be mounted; `uh doctor` shows the state';

function blockOn(folded: FoldedRuntime, raw: string, why: string, hint: string): void {
  const own = `${folded.outcome.raw}: ${folded.outcome.message}`;
  folded.outcome = {
    status: 'blocked',
    raw,
    message: `${why} (the runtime's own outcome was ${own})`,
    hint,
    timed_out: false,
  };
}

function toRuntimeResult(run: OperationRun): RuntimeResult {
  const { folded, dir } = run;
  const { mission } = run.prepared;
  return {
    schema_version: 'uh.runtime-result.v0',
    mission_id: mission.mission_id,
    operation_id: mission.operation_id,
    runtime: runtimeIdentity(run),
    outcome: folded.outcome,
    status: folded.outcome.status,
    summary: folded.final_message.split('\n')[0]?.slice(0, 200) ?? '',
    final_message: folded.final_message,
    final_message_source: folded.final_message_source,
    usage: folded.usage,
    tool_calls: folded.tool_calls,
    messages: folded.messages,
    duration_ms: run.timings.runtime_ms ?? 0,
    logs: readdirSync(dir)
      .filter((f) => f.startsWith('runtime.') && f.endsWith('.log'))
      .map((f) => join(dir, f)),
  };
}

/** The runtime_config's `model`, when the runtime has one (codex, pi, hermes, …). */
function configuredModel(config: unknown): string | null {
  const model = (config as { model?: unknown } | null)?.model;
  return typeof model === 'string' && model !== '' ? model.slice(0, 128) : null;
}

/** The runtime part of the runtime result and the receipt: adapter ids, the run's session ids, model and version. */
export function runtimeIdentity(run: OperationRun): RuntimeResult['runtime'] {
  const { folded } = run;
  const model = folded.model ?? configuredModel(run.prepared.runtime.publicConfig);
  return {
    adapter_id: run.prepared.runtime.runtimeId,
    runtime_kind: run.prepared.runtime.adapter.id,
    session_id: folded.session_id,
    thread_id: folded.thread_id,
    turn_id: folded.turn_id,
    ...(model ? { model } : {}),
    ...(folded.runtime_version ? { version: folded.runtime_version } : {}),
  };
}
