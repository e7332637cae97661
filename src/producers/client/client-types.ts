/**
 * The typed client's surface (`ultimate-harness/client`): queue mode for programs that are not a
 * shell, over Redis or the HTTP API, with the CLI's errors (`UhError` kinds) and exit semantics
 * (`exitCode` of a settled operation is what `uh mission submit --wait` would exit with).
 */
import type { UhEvent } from '../../shared/contracts/event.js';
import type { Receipt } from '../../shared/contracts/receipt.js';

export type { Mission } from '../../shared/contracts/mission.js';
export type { Receipt, CheckResult } from '../../shared/contracts/receipt.js';
export type { UhEvent } from '../../shared/contracts/event.js';

export interface Submitted {
  operationId: string;
  /** true: this operation_id already existed with the same contract; nothing runs twice. */
  attached: boolean;
  /** The operation's state right after submit (`queued`, or further along when attached). */
  state: string;
}

export interface OperationView {
  operationId: string;
  /** queued | running | verifying | finished | unknown */
  state: string;
  status: string | null;
  verdict: string | null;
  exitCode: number | null;
  runtime: string;
}

export interface Settled {
  operationId: string;
  /** `finished`, `unknown` (dispatch unproven: `uh mission recover`), or `wait_timed_out`. */
  state: 'finished' | 'unknown' | 'wait_timed_out';
  /** The receipt when finished (null otherwise). */
  receipt: Receipt | null;
  /** What the CLI exits with: 0 ok, 1 failed/verification_failed/scope_violation, 3 blocked, 4 cancelled, 5 unknown or timed out. */
  exitCode: number;
}

export interface WaitOptions {
  /** Give up after this long: `state: 'wait_timed_out'`, exit code 5, the operation keeps running. */
  timeoutMs?: number;
  /** Stop waiting (the operation is not cancelled: call `cancel`). */
  signal?: AbortSignal;
  onEvent?: (event: UhEvent) => void;
}

export interface Collected {
  dir: string;
  files: string[];
  receipt: Receipt | null;
}

export interface UhClient {
  /** Validate and enqueue (idempotent on operation_id); throws UhError `invalid_input` / `conflict`. */
  submit(mission: unknown, options?: { runtime?: string }): Promise<Submitted>;
  /** The operation as it is now; throws UhError `not_found`. */
  attach(operationId: string): Promise<OperationView>;
  /** Follow until it settles (or the timeout/abort). */
  wait(operationId: string, options?: WaitOptions): Promise<Settled>;
  /** Every event from the start, live, ending when the operation settles (or `signal` aborts). */
  watch(operationId: string, options?: { signal?: AbortSignal }): AsyncIterable<UhEvent>;
  /** Ask for a cancel; returns the outcome phrase (`cancel sent …`, `already finished`, …). */
  cancel(operationId: string, reason?: string): Promise<string>;
  /** Write the receipt, diff, final message (and, over Redis, check logs and events) into `dir`. */
  collect(operationId: string, dir: string): Promise<Collected>;
  close(): Promise<void>;
}

export type ClientOptions =
  /** Talk to the fleet's Redis directly (the same keys as the CLI: prefix default `uh`). */
  | { redisUrl: string; prefix?: string; stateDir?: string; cacheDir?: string }
  /** Talk to `uh api start` (docs/http-api.md). */
  | { apiUrl: string; token?: string };
