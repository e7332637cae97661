/**
 * The one context every pipeline phase reads and writes (src/workers/execute-operation.ts).
 * Fixed at open: the prepared operation, its dir, clock, spawn, logger, environment, secrets, the
 * record and the event log. Written by one phase each: `sandbox` (sandbox), `folded` and
 * `deadlineMs` (runtime),
 * `diff` and `violations` (diff), `checks` (checks); `failure` by whichever phase ends the run
 * early (a cancel, a pipeline error). `timings` gains one entry per timed phase.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { CheckResult, Receipt } from '../../shared/contracts/receipt.js';
import type { Outcome } from '../../shared/contracts/runtime-result.js';
import type { OperationState } from '../../shared/contracts/status.js';
import { errorMessage } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { spawnGroup, type SpawnGroup } from '../../shared/process/spawn-group.js';
import { hostSecretValues, redact, secretEnvValues } from '../../shared/redact.js';
import { loadReceiptKey } from '../../operation/receipt-signature.js';
import type { ReceiptKey } from '../../operation/receipt-keys.js';
import type { OperationSettings } from '../../operation/settings.js';
import type { FilesTarget } from '../../operation/finish-operation.js';
import { outcomeOfError } from '../../operation/outcome-of-error.js';
import { buildRuntimeEnv, type RuntimeEnv } from '../../shared/process/runtime-env.js';
import { resolveMissionEnv, type ResolvedEnv } from '../../shared/secret-env.js';
import { initialFold, type FoldedRuntime } from '../../shared/runtime/fold-events.js';
import type { AbortReasonV1, RuntimeJournalV1 } from '../../shared/runtime/v1/index.js';
import { operationDir, writeRecord, type OperationRecord } from '../../operation/operation-files.js';
import type { PreparedOperation } from '../../operation/prepare-operation.js';
import { decideIsolation, probeBwrap, type IsolationDecision } from '../sandbox/isolation.js';
import { cgroupScope } from '../../shared/process/mission-cgroup.js';
import { egressFor, type OperationEgress } from './egress-phase.js';
import { runLimitsFor, type RunLimits } from './limits-phase.js';
import type { Sandbox } from '../sandbox/worktree.js';
import { EventLog } from '../state/event-log.js';
import type { DiffCapture } from '../verification/capture-diff.js';
import type { ScopeViolation } from '../verification/scope-check.js';
import { monotonicMs } from '../../shared/clock.js';

/**
 * The pipeline's seams into the caller: the queue persists state and runtime start in Redis and
 * publishes events; inline needs none of them.
 */
export interface PipelineHooks {
  /** Subscribe live publishers to the event log before anything is appended. */
  onEventLog?: (log: EventLog) => void;
  /** Called right before the runtime starts (queue mode persists "runtime started" here). */
  beforeRuntime?: () => Promise<void>;
  /** Durable journal for the runtime (default: runtime-journal.json in the operation dir). */
  journal?: RuntimeJournalV1;
  /** Called on each state change before the end, after operation.json is written. */
  onState?: (state: OperationState, record: OperationRecord) => Promise<void>;
  /**
   * How the operation ends once its receipt is built (default: finished in its files). The queue
   * decides a retry here, before any receipt or final event exists, then finishes in Redis.
   */
  end?: (receipt: Receipt, local: FilesTarget) => Promise<ExecuteResult>;
}

export interface ExecuteOptions {
  prepared: PreparedOperation;
  /** The host's settings, compiled once (src/operation/settings.ts). */
  settings: OperationSettings;
  mode: 'inline' | 'queue';
  attempt?: number;
  /** The submitting tenant (the job's); unset: the settings' (`UH_TENANT`, inline runs). */
  tenant?: string;
  /** Abort with `{kind:'cancel', message}` to cancel the operation. */
  signal?: AbortSignal;
  hooks?: PipelineHooks;
  /** Seams for tests: the clock, the process spawner, the adapters' fetch. */
  now?: () => Date;
  spawn?: SpawnGroup;
  fetch?: typeof globalThis.fetch;
}

export type ExecuteResult =
  | { state: 'finished'; receipt: Receipt; receiptPath: string | null; dir: string; settled: boolean }
  /** The pool's retry policy ran the operation again as a new attempt: no receipt, no final event. */
  | { state: 'retry'; attempt: number; dir: string }
  /** Dispatch could not be proven: no receipt, the sandbox kept, `uh mission recover` settles it. */
  | { state: 'unknown'; reason: string; hint: string | undefined; dir: string };

export interface OperationRun {
  readonly options: ExecuteOptions;
  readonly settings: OperationSettings;
  readonly prepared: PreparedOperation;
  readonly dir: string;
  readonly now: () => Date;
  readonly spawn: SpawnGroup;
  readonly logger: Logger;
  /** The runtime's environment: the allowlist, what adapter and mission pass through, `sandbox.env`, port range. */
  readonly env: Record<string, string | undefined>;
  /** The checks' environment: the same without the adapter's provider keys. */
  readonly checkEnv: Record<string, string | undefined>;
  readonly secrets: readonly string[];
  readonly startedAt: Date;
  /** monotonicMs() at open, for `total_ms`. */
  readonly t0: number;
  readonly timings: Record<string, number>;
  readonly record: OperationRecord;
  readonly events: EventLog;
  /** Decided once at open: bwrap or not (and why), or a refusal when isolation is required. */
  readonly isolation: IsolationDecision;
  /** A `{secret_ref}` of `sandbox.env` this worker cannot resolve: the runtime never starts (blocked). */
  readonly secretRefusal: { message: string; hint: string } | null;
  /** Egress mode under isolation: uh's proxy (closed by executeOperation) and the sandbox's bridge to it. */
  readonly egress: OperationEgress | null;
  /** The mission's limits (the host's, lowered by the mission), how they hold here, and what was hit. */
  readonly limits: RunLimits;
  sandbox: Sandbox | null;
  /** monotonicMs() at which `timeout_seconds` ends: set when the runtime starts; it bounds the diff too. */
  deadlineMs: number | null;
  folded: FoldedRuntime;
  diff: DiffCapture | null;
  violations: ScopeViolation[];
  checks: CheckResult[];
  /** The hidden verifier's reward (0..1), null when it wrote none or the mission has none. */
  reward: number | null;
  failure: Outcome | null;
}

/**
 * The runtime's and the checks' environments: an allowlist of the worker's (never all of it),
 * what the adapter and the mission pass through, the mission's `sandbox.env` and port range.
 */
function sandboxEnv(options: ExecuteOptions, missionEnv: Record<string, string>): RuntimeEnv {
  const { mission, runtime } = options.prepared;
  const built = buildRuntimeEnv({
    // env passthrough: the worker's environment, filtered by the allowlist below
    worker: options.settings.env,
    adapterNames: runtime.adapter.envPassthrough?.(runtime.config) ?? [],
    passthrough: mission.sandbox.env_passthrough ?? [],
    passthroughAllow: options.settings.policy.envPassthroughAllow,
    missionEnv,
  });
  if (mission.sandbox.port_range) {
    for (const env of [built.runtime, built.checks]) {
      env.UH_PORT_RANGE_START = String(mission.sandbox.port_range[0]);
      env.UH_PORT_RANGE_END = String(mission.sandbox.port_range[1]);
    }
  }
  return built;
}

/** uh's memo of a successful bwrap probe (`shared/process/bwrap-probe.ts`). */
export function bwrapProbeFile(cacheDir: string): string {
  return join(cacheDir, 'bwrap-probe.json');
}

function isolationFor(options: ExecuteOptions, env: Record<string, string | undefined>): IsolationDecision {
  const { sandbox } = options.prepared.mission;
  const { isolation, cacheDir, policy } = options.settings;
  const probe = () => probeBwrap(env.PATH, { cacheFile: bwrapProbeFile(cacheDir) });
  return decideIsolation(isolation.mode, sandbox.isolation, sandbox.network, probe, policy.allowMissionIsolationOff);
}

/**
 * Every value to scrub from what the operation writes: the runtime's and the mission's secrets,
 * and the worker's own (its secret-looking UH_* values, UH_RECEIPT_KEY, the key file, Redis's
 * password), which no agent is given but some path might still expose.
 */
/** How a signing key could appear in text: the HMAC secret, or the private key's PEM and its base64 body. */
function keyTexts(key: ReceiptKey): string[] {
  if (key.alg === 'hmac-sha256') return [key.secret.toString('utf8')];
  const pem = String(key.privateKey.export({ type: 'pkcs8', format: 'pem' })).trim();
  const body = pem
    .split('\n')
    .filter((l) => !l.startsWith('-----'))
    .join('');
  return [pem, body];
}

/** The first line of the worker's Redis password file, when it has one (never given to an agent). */
function redisPassword(file: string | null): string[] {
  if (!file) return [];
  try {
    const password = (readFileSync(file, 'utf8').split(/\r?\n/)[0] ?? '').trim();
    return password ? [password] : [];
  } catch {
    return [];
  }
}

function secretsOf(options: ExecuteOptions, env: RuntimeEnv, resolved: ResolvedEnv): string[] {
  const { runtime } = options.prepared;
  let signingKey: string[] = [];
  try {
    const key = loadReceiptKey(options.settings.receiptKey, false);
    signingKey = key ? keyTexts(key) : [];
  } catch {
    // an unreadable or short key file fails at signing, with its own message
  }
  // env passthrough: the worker's environment, only to learn which of its own secrets to scrub
  const host = hostSecretValues(options.settings.env);
  const mine = [...runtime.secrets, ...secretEnvValues(resolved.env), ...resolved.secrets, ...env.secrets];
  return [...new Set([...mine, ...host, ...signingKey, ...redisPassword(options.settings.redisPasswordFile)])];
}

function newRecord(options: ExecuteOptions, startedAt: Date): OperationRecord {
  const { prepared } = options;
  const { mission, runtime } = prepared;
  return {
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
}

/** Open the operation: mission.json, the event log (publishers subscribed), `running`, `operation.started`. */
export async function openOperation(options: ExecuteOptions): Promise<OperationRun> {
  const { prepared } = options;
  const { mission, runtime } = prepared;
  const now = options.now ?? (() => new Date());
  const dir = operationDir(options.settings.stateDir, mission.operation_id);
  const startedAt = now();
  const t0 = monotonicMs();
  // {secret_ref} values resolved here, in memory only; an unresolvable one blocks the runtime (runtime-phase.ts).
  const resolved = resolveMissionEnv(mission.sandbox.env, options.settings.secretsDir);
  const env = sandboxEnv(options, resolved.env);
  const secrets = secretsOf(options, env, resolved);
  const isolation = isolationFor(options, env.runtime);
  writeFileSync(join(dir, 'mission.json'), `${JSON.stringify(redact(mission, secrets), null, 2)}\n`);
  const events = new EventLog(join(dir, 'events.jsonl'), mission.operation_id, now);
  events.secrets = secrets;
  options.hooks?.onEventLog?.(events);
  const run: OperationRun = {
    options,
    settings: options.settings,
    prepared,
    dir,
    now,
    spawn: options.spawn ?? spawnGroup,
    logger: options.settings.logger.child({ operation_id: mission.operation_id }),
    env: env.runtime,
    checkEnv: env.checks,
    secrets,
    startedAt,
    t0,
    timings: {},
    record: newRecord(options, startedAt),
    events,
    isolation,
    secretRefusal: resolved.missing,
    egress: await egressFor(prepared, isolation, env.runtime),
    limits: {
      ...runLimitsFor(
        options.settings.limits,
        mission.sandbox.limits,
        isolation,
        options.settings.env.PATH,
        options.settings.limitBackend,
      ),
      scope: cgroupScope(options.settings.cacheDir),
    },
    sandbox: null,
    deadlineMs: null,
    folded: initialFold({ status: 'failed', raw: 'not_started', message: 'runtime did not start', timed_out: false }),
    diff: null,
    violations: [],
    checks: [],
    reward: null,
    failure: null,
  };
  await setState(run, 'running');
  events.append('operation.started', {
    mission_id: mission.mission_id,
    runtime: runtime.runtimeId,
    runtime_kind: runtime.adapter.id,
    base_commit: prepared.baseCommit,
    contract_digest: prepared.contractDigest,
    attempt: run.record.attempt,
    mode: options.mode,
    isolation: run.isolation.status.kind,
  });
  return run;
}

/** Patch the record, write operation.json atomically, then tell the caller (queue mode mirrors it to Redis). */
export async function setState(
  run: OperationRun,
  state: OperationState,
  patch: Partial<OperationRecord> = {},
): Promise<void> {
  Object.assign(run.record, patch, { state, updated_at: run.now().toISOString() });
  writeRecord(run.settings.stateDir, run.record);
  await run.options.hooks?.onState?.(state, run.record);
}

/** Run one phase's work, recording its duration as `<name>_ms`, failures included. */
export async function timed<T>(run: OperationRun, name: string, fn: () => Promise<T>): Promise<T> {
  const t = monotonicMs();
  try {
    return await fn();
  } finally {
    const ms = Math.round(monotonicMs() - t);
    run.timings[`${name}_ms`] = ms;
    run.logger.info({ phase: name, duration_ms: ms }, 'phase end');
  }
}

/** The cancel reason, once the caller aborted the operation's signal. */
export function cancelReason(run: OperationRun): AbortReasonV1 | null {
  const { signal } = run.options;
  return signal?.aborted ? (signal.reason as AbortReasonV1) : null;
}

/** Any phase that throws ends the run as `failed`; the receipt still gets written. */
export function recordPipelineError(run: OperationRun, error: unknown): void {
  run.logger.error({ err: errorMessage(error) }, 'operation failed in the pipeline');
  run.failure = outcomeOfError(error);
}
