/**
 * The pipeline of one operation, shared by the inline executor and the queue workers:
 *
 *   sandbox (worktree at the base commit) → runtime (events appended as they happen)
 *   → runtime result → diff → scope check → checks → verdict → receipt → sandbox retention
 *
 * States written to operation.json: running → verifying → finished. Whatever fails, a receipt
 * is written for the terminal state; nothing already written is lost.
 */
import { runtimeFetch } from '../shared/transport/http-fetch.js';
import { readdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { CheckResult, Receipt } from '../shared/contracts/receipt.js';
import type { RuntimeResult, Outcome } from '../shared/contracts/runtime-result.js';
import type { OperationState } from '../shared/contracts/status.js';
import { errorMessage, UhError } from '../shared/errors.js';
import { silentLogger, type Logger } from '../shared/logger.js';
import { spawnGroup, type SpawnGroup } from '../shared/process/spawn-group.js';
import { redact, secretEnvValues } from '../shared/redact.js';
import { foldOne, initialFold, type FoldedRuntime } from '../shared/runtime/fold-events.js';
import { guardTerminal } from '../shared/runtime/guard-terminal.js';
import type { AbortReasonV1, RuntimeContextV1, RuntimeJournalV1 } from '../shared/runtime/v1/index.js';
import type { PreparedOperation } from '../producers/prepare-operation.js';
import { captureDiff, type DiffCapture } from './verification/capture-diff.js';
import { checkScope, type ScopeViolation } from './verification/scope-check.js';
import { runChecks } from './verification/run-checks.js';
import { buildReceipt } from './results/build-receipt.js';
import { decideVerdict } from './results/verdict.js';
import { createSandbox, removeSandbox, retainSandbox, type Sandbox } from './sandbox/worktree.js';
import { EventLog } from './state/event-log.js';
import { fileJournal } from './state/file-journal.js';
import { describeGroup, PROCESS_GROUPS_KEY, type ProcessGroup } from '../shared/process/leftover-groups.js';
import { operationDir, writeReceiptOnce, writeRecord, type OperationRecord } from './state/operation-files.js';

export interface ExecuteOptions {
  prepared: PreparedOperation;
  stateDir: string;
  cacheDir: string;
  mode: 'inline' | 'queue';
  attempt?: number;
  /** Abort with `{kind:'cancel', message}` to cancel the operation. */
  signal?: AbortSignal;
  sandboxKeepHours?: number;
  keepSandbox?: boolean;
  now?: () => Date;
  spawn?: SpawnGroup;
  fetch?: typeof globalThis.fetch;
  logger?: Logger;
  /** Environment for the runtime and checks (defaults to this process's). */
  env?: Record<string, string | undefined>;
  /** Subscribe live publishers to the event log before anything is appended. */
  onEventLog?: (log: EventLog) => void;
  /** Called right before the runtime starts (queue mode persists "runtime started" here). */
  beforeRuntime?: () => Promise<void>;
  /** Durable journal for the runtime (default: runtime-journal.json in the operation dir). */
  journal?: RuntimeJournalV1;
  /** Called on each state change, after operation.json is written. */
  onState?: (state: OperationState, record: OperationRecord) => Promise<void>;
}

export type ExecuteResult =
  | { state: 'finished'; receipt: Receipt; receiptPath: string; dir: string }
  /** Dispatch could not be proven: no receipt, the sandbox kept, `uh mission recover` settles it. */
  | { state: 'unknown'; reason: string; hint: string | undefined; dir: string };

function emptyFold(): FoldedRuntime {
  return initialFold({ status: 'failed', raw: 'not_started', message: 'runtime did not start', timed_out: false });
}

export async function executeOperation(options: ExecuteOptions): Promise<ExecuteResult> {
  const { prepared, stateDir, cacheDir } = options;
  const { mission, runtime } = prepared;
  const now = options.now ?? (() => new Date());
  const spawn = options.spawn ?? spawnGroup;
  const logger = (options.logger ?? silentLogger).child({ operation_id: mission.operation_id });
  const dir = operationDir(stateDir, mission.operation_id);
  const startedAt = now();
  const t0 = performance.now();
  const timings: Record<string, number> = {};
  const phase = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    try {
      return await fn();
    } finally {
      timings[`${name}_ms`] = Math.round(performance.now() - t);
    }
  };
  const baseEnv = options.env ?? process.env;
  const sandboxEnv: Record<string, string | undefined> = { ...baseEnv, ...mission.sandbox.env };
  if (mission.sandbox.port_range) {
    sandboxEnv.UH_PORT_RANGE_START = String(mission.sandbox.port_range[0]);
    sandboxEnv.UH_PORT_RANGE_END = String(mission.sandbox.port_range[1]);
  }
  const secrets = [...runtime.secrets, ...secretEnvValues(mission.sandbox.env)];

  const record: OperationRecord = {
    schema_version: 'uh.operation.v0',
    operation_id: mission.operation_id,
    mission_id: mission.mission_id,
    runtime: runtime.runtimeId,
    contract_digest: prepared.contractDigest,
    prompt_digest: prepared.promptDigest,
    state: 'running',
    base_commit: prepared.baseCommit,
    attempt: options.attempt ?? 1,
    created_at: startedAt.toISOString(),
    updated_at: startedAt.toISOString(),
    worker: { host: hostname(), pid: process.pid },
    sandbox_path: null,
    runtime_started: false,
    mode: options.mode,
    status: null,
    verdict: null,
    exit_code: null,
  };
  const setState = async (state: OperationState, patch: Partial<OperationRecord> = {}) => {
    Object.assign(record, patch, { state, updated_at: now().toISOString() });
    writeRecord(stateDir, record);
    await options.onState?.(state, record);
  };

  writeFileSync(join(dir, 'mission.json'), `${JSON.stringify(redact(mission, secrets), null, 2)}\n`);
  const events = new EventLog(join(dir, 'events.jsonl'), mission.operation_id, now);
  events.secrets = secrets;
  options.onEventLog?.(events);
  await setState('running');
  events.append('operation.started', {
    mission_id: mission.mission_id,
    runtime: runtime.runtimeId,
    runtime_kind: runtime.adapter.id,
    base_commit: prepared.baseCommit,
    contract_digest: prepared.contractDigest,
    attempt: record.attempt,
    mode: options.mode,
  });

  let sandbox: Sandbox | null = null;
  let folded = emptyFold();
  let diff: DiffCapture | null = null;
  let violations: ScopeViolation[] = [];
  let checks: CheckResult[] = [];
  let failure: Outcome | null = null;
  const cancelled = (): AbortReasonV1 | null => (options.signal?.aborted ? (options.signal.reason as AbortReasonV1) : null);

  try {
    sandbox = await phase('sandbox', () => createSandbox(cacheDir, prepared.mirror, prepared.baseCommit, mission.operation_id, startedAt));
    await setState('running', { sandbox_path: sandbox.path });
    events.append('sandbox.created', { path: sandbox.path, base_commit: prepared.baseCommit, backend: 'git-worktree' });

    if (!cancelled()) await options.beforeRuntime?.();
    // Checked again after beforeRuntime: a queue cancel can land while it persists "runtime started".
    if (cancelled()) {
      failure = { status: 'cancelled', raw: 'cancel', message: cancelled()?.message ?? 'cancelled', timed_out: false };
    } else {
      await setState('running', { runtime_started: true });
      folded = await phase('runtime', () => runRuntime(options, sandbox as Sandbox, dir, events, sandboxEnv, spawn, logger));
    }
    const runtimeResult = toRuntimeResult(prepared, folded, dir, timings.runtime_ms ?? 0);
    writeFileSync(join(dir, 'runtime-final.txt'), folded.final_message);
    writeFileSync(join(dir, 'runtime-result.yaml'), toYaml(redact(runtimeResult, secrets)));
    if (folded.dispatch_unknown) return await settleUnknown(folded, sandbox);

    await setState('verifying', { session_id: folded.session_id, thread_id: folded.thread_id, turn_id: folded.turn_id });
    diff = await phase('diff', () => captureDiff(sandbox!.path, prepared.baseCommit, join(dir, 'diff.patch'), dir));
    events.append('diff.captured', { files: diff.changed.length, bytes: diff.bytes, digest: diff.digest, head_commit: diff.headCommit });
    violations = checkScope(diff.changed, mission.scope);
    events.append('scope.checked', { ok: violations.length === 0, violations });

    const status = failure?.status ?? folded.outcome.status;
    if (status === 'completed' && violations.length === 0 && mission.verification.length > 0) {
      checks = await phase('checks', () =>
        runChecks({
          checks: mission.verification,
          workDir: sandbox!.path,
          logDir: dir,
          env: sandboxEnv,
          spawn,
          ...(options.signal ? { signal: options.signal } : {}),
          onResult: (r) => events.append('verification.check', { ...r }),
        }),
      );
      const reason = cancelled();
      if (reason) failure = { status: 'cancelled', raw: 'cancel', message: `${reason.message} (during verification)`, timed_out: false };
    }
  } catch (error) {
    logger.error({ err: errorMessage(error) }, 'operation failed in the pipeline');
    failure = {
      status: 'failed',
      raw: UhError.isInstance(error) ? `uh:${error.kind}` : 'internal',
      message: errorMessage(error),
      timed_out: false,
      ...(UhError.isInstance(error) && error.hint ? { hint: error.hint } : {}),
    };
  }

  async function settleUnknown(f: FoldedRuntime, box: Sandbox): Promise<ExecuteResult> {
    const hint = f.outcome.hint ?? `uh mission recover ${mission.operation_id}`;
    events.append('operation.unknown', { reason: f.outcome.message, hint, raw: f.outcome.raw });
    const until = new Date(now().getTime() + (options.sandboxKeepHours ?? 24) * 3600_000);
    retainSandbox(cacheDir, box, mission.operation_id, until, startedAt);
    events.append('sandbox.kept', { path: box.path, until: until.toISOString() });
    await setState('unknown', { session_id: f.session_id, thread_id: f.thread_id, turn_id: f.turn_id });
    await events.close();
    return { state: 'unknown', reason: f.outcome.message, hint, dir };
  }

  const outcome = failure ?? folded.outcome;
  const verdictNow = decideVerdict({ scopeViolations: violations.length, checksDeclared: mission.verification.length, checks });
  const keep =
    options.keepSandbox === true || !(outcome.status === 'completed' && (verdictNow === 'verified' || verdictNow === 'unverified'));
  timings.total_ms = Math.round(performance.now() - t0);
  const receipt = buildReceipt({
    mission,
    contractDigest: prepared.contractDigest,
    promptDigest: prepared.promptDigest,
    baseCommit: prepared.baseCommit,
    runtime: runtimeIdentity(prepared, folded),
    attempt: record.attempt,
    mode: options.mode,
    startedAt,
    finishedAt: now(),
    timings,
    outcome,
    usage: folded.usage,
    finalMessage: folded.final_message,
    finalMessageSource: folded.final_message_source,
    diff,
    violations,
    checks,
    sandbox: { path: sandbox?.path ?? null, retained: sandbox !== null && keep },
    secrets,
  });
  const { verdict, exit_code: exitCode } = receipt;
  const receiptPath = writeReceiptOnce(dir, receipt);
  events.append('operation.completed', { status: outcome.status, verdict, exit_code: exitCode, receipt: receiptPath });

  if (sandbox) {
    if (keep) {
      const until = new Date(now().getTime() + (options.sandboxKeepHours ?? 24) * 3600_000);
      retainSandbox(cacheDir, sandbox, mission.operation_id, until, startedAt);
      events.append('sandbox.kept', { path: sandbox.path, until: until.toISOString() });
    } else {
      await removeSandbox(cacheDir, { name: sandbox.name, path: sandbox.path, mirror: sandbox.mirror.path }).catch((error) =>
        logger.warn({ err: errorMessage(error) }, 'sandbox removal failed; the next sweep collects it'),
      );
      events.append('sandbox.removed', { path: sandbox.path });
    }
  }
  await setState('finished', { status: outcome.status, verdict, exit_code: exitCode });
  await events.close();
  return { state: 'finished', receipt, receiptPath, dir };
}

/** Launch the adapter under the mission timeout and fold its guarded event stream. */
async function runRuntime(
  options: ExecuteOptions,
  sandbox: Sandbox,
  dir: string,
  events: EventLog,
  env: Record<string, string | undefined>,
  spawn: SpawnGroup,
  logger: Logger,
): Promise<FoldedRuntime> {
  const { prepared } = options;
  const { mission, runtime } = prepared;
  const controller = new AbortController();
  const timeoutMs = mission.timeout_seconds * 1000;
  const timer = setTimeout(
    () => controller.abort({ kind: 'timeout', message: `mission timed out after ${mission.timeout_seconds} s`, timeoutMs } satisfies AbortReasonV1),
    timeoutMs,
  );
  const onCancel = () => controller.abort(options.signal?.reason ?? { kind: 'cancel', message: 'cancelled' });
  if (options.signal?.aborted) onCancel();
  else options.signal?.addEventListener('abort', onCancel, { once: true });

  const journal = options.journal ?? fileJournal(join(dir, 'runtime-journal.json'));
  // Every process group the runtime starts is journalled, so `uh mission recover` can end the
  // ones a dead uh process left behind.
  const groups: ProcessGroup[] = [];
  const recordingSpawn: SpawnGroup = (spawnOptions) => {
    const child = spawn(spawnOptions);
    const group = child.pid === undefined ? null : describeGroup(child.pid);
    if (group) {
      groups.push(group);
      void journal.put({ [PROCESS_GROUPS_KEY]: [...groups] }).catch(() => undefined);
    }
    return child;
  };
  const ctx: RuntimeContextV1 = {
    workDir: sandbox.path,
    logDir: dir,
    signal: controller.signal,
    spawn: recordingSpawn,
    fetch: options.fetch ?? runtimeFetch,
    now: () => (options.now ?? (() => new Date()))().getTime(),
    env,
    journal,
    mission: { missionId: mission.mission_id, operationId: mission.operation_id, attempt: options.attempt ?? 1 },
  };
  const folded = initialFold();
  const toolIds = new Set<string>();
  try {
    const plan = await runtime.adapter.prepare({
      config: runtime.config,
      prompt: prepared.prompt,
      workDir: sandbox.path,
      mission: { missionId: mission.mission_id, operationId: mission.operation_id },
    });
    const session = runtime.adapter.launch(plan, ctx);
    for await (const event of guardTerminal(session.events)) {
      foldOne(folded, event, toolIds);
      events.append(event.type, event.data as Record<string, unknown>);
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onCancel);
  }
  return folded;
}

function toRuntimeResult(prepared: PreparedOperation, folded: FoldedRuntime, dir: string, durationMs: number): RuntimeResult {
  const { mission, runtime } = prepared;
  return {
    schema_version: 'uh.runtime-result.v0',
    mission_id: mission.mission_id,
    operation_id: mission.operation_id,
    runtime: runtimeIdentity(prepared, folded),
    outcome: folded.outcome,
    status: folded.outcome.status,
    summary: folded.final_message.split('\n')[0]?.slice(0, 200) ?? '',
    final_message: folded.final_message,
    final_message_source: folded.final_message_source,
    usage: folded.usage,
    tool_calls: folded.tool_calls,
    messages: folded.messages,
    duration_ms: durationMs,
    logs: readdirSync(dir)
      .filter((f) => f.startsWith('runtime.') && f.endsWith('.log'))
      .map((f) => join(dir, f)),
  };
}

function runtimeIdentity(prepared: PreparedOperation, folded: FoldedRuntime) {
  return {
    adapter_id: prepared.runtime.runtimeId,
    runtime_kind: prepared.runtime.adapter.id,
    session_id: folded.session_id,
    thread_id: folded.thread_id,
    turn_id: folded.turn_id,
  };
}
