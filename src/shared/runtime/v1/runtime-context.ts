import type { SpawnGroup } from '../../process/spawn-group.js';

/** Why the run's signal was aborted: a cancel (→ `cancelled`) or the mission timeout (→ `failed`, timed_out). */
export type AbortReasonV1 =
  { kind: 'cancel'; message: string } | { kind: 'timeout'; message: string; timeoutMs: number };

export function abortReasonOf(signal: AbortSignal): AbortReasonV1 {
  const reason: unknown = signal.reason;
  if (reason && typeof reason === 'object' && 'kind' in reason) {
    const r = reason as AbortReasonV1;
    if (r.kind === 'cancel' || r.kind === 'timeout') return r;
  }
  return { kind: 'cancel', message: reason instanceof Error ? reason.message : 'cancelled' };
}

/**
 * A small durable record per operation, for runtimes that must prove identity across crashes
 * (the Codex app-server's thread id, baseline turn ids, turn id). `put` must be durable when it
 * returns: inline it is `runtime-journal.json` in the operation dir, written atomically; in queue
 * mode the operation record in Redis. Values must be JSON.
 */
export interface RuntimeJournalV1 {
  get(): Promise<Record<string, unknown>>;
  /** Merge `patch` into the journal and persist it before resolving. */
  put(patch: Record<string, unknown>): Promise<void>;
}

/**
 * All I/O an adapter does goes through this context, which defaults to the real thing, so tests
 * can drive every branch.
 *
 * Deliberately absent: a logger and an id generator. An adapter reports through `runtime.log`
 * events (they reach the runtime log, the receipt and the worker's log alike), and every id an
 * adapter sends must be derived from `mission` (e.g. the client message id from operation id
 * and attempt) so that a retried or recovered attempt can recognise its own work; a fresh
 * random id would defeat that.
 */
export interface RuntimeContextV1 {
  /** The sandbox worktree. The adapter must run inside it and must not write outside it or `logDir`. */
  readonly workDir: string;
  /** Where runtime logs go (the operation's state dir). */
  readonly logDir: string;
  /** Aborted on cancel or timeout; see `abortReasonOf`. Must stop spawned processes and requests. */
  readonly signal: AbortSignal;
  /** Spawns a child in its own process group, output streamed to disk. */
  readonly spawn: SpawnGroup;
  /**
   * Every HTTP request of the adapter must go through it and carry `signal`. Default:
   * `runtimeFetch` (undici, no transport timeouts: the adapter's own timers are the budget;
   * streaming bodies are read as they arrive).
   */
  readonly fetch: typeof globalThis.fetch;
  readonly now: () => number;
  /** Environment for children (already contains the mission's sandbox env). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Durable identity facts of this operation; survives the worker dying. */
  readonly journal: RuntimeJournalV1;
  /** Identity of this execution, for prompts, client message ids and logs. */
  readonly mission: { readonly missionId: string; readonly operationId: string; readonly attempt: number };
  /**
   * `bwrap`: every child of `spawn` runs inside uh's own isolation (docs/security.md), so a
   * runtime's own nested sandbox may be redundant (codex runs `danger-full-access` then).
   * Absent or `none`: unisolated.
   */
  readonly isolation?: 'bwrap' | 'none';
}

/** Context for `check()`: no sandbox, a short budget. */
export interface CheckContextV1 {
  readonly spawn: SpawnGroup;
  /** As {@link RuntimeContextV1.fetch}. */
  readonly fetch: typeof globalThis.fetch;
  readonly now: () => number;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly signal?: AbortSignal;
  /**
   * A scratch directory the check may start its children in (`uh doctor` under isolation: the one
   * writable directory they see, as a mission's work dir). Unset: the check makes its own.
   */
  readonly workDir?: string;
}
