/**
 * The receipt of an operation that settles without finishing the pipeline here: a job cancelled
 * while waiting, a preparation that failed on the worker, an unknown operation settled by
 * `uh mission recover` or by a dead owner's runtime records. Built by the one builder
 * (build-receipt.ts) from the queue record: no diff, no checks; the runtime's final message and
 * usage when its own records said how the run ended.
 */
import { hostname } from 'node:os';
import type { Mission } from '../shared/contracts/mission.js';
import type { Receipt } from '../shared/contracts/receipt.js';
import type { Outcome } from '../shared/contracts/runtime-result.js';
import type { QueueRecord } from '../shared/queue/operation-store.js';
import type { RuntimeFinishedData } from '../shared/runtime/v1/runtime-event.js';
import { buildReceipt } from './build-receipt.js';

export interface SynthesizeOptions {
  /** How the runtime's own records say the run ended (runtimes with `recover()`). */
  finished?: RuntimeFinishedData;
  now?: Date;
}

export function synthesizeReceipt(record: QueueRecord, outcome: Outcome, options: SynthesizeOptions = {}): Receipt {
  const { finished } = options;
  const now = options.now ?? new Date();
  return buildReceipt({
    mission: record.job.mission as Mission,
    contractDigest: record.contract_digest,
    promptDigest: record.prompt_digest,
    baseCommit: record.base_commit,
    runtime: {
      adapter_id: record.runtime,
      runtime_kind: record.runtime,
      session_id: finished?.session_id ?? record.session_id,
      thread_id: finished?.thread_id ?? record.thread_id,
      turn_id: finished?.turn_id ?? record.turn_id,
    },
    attempt: record.attempt,
    worker: { host: record.worker?.host ?? hostname(), pid: record.worker?.pid ?? process.pid },
    mode: 'queue',
    startedAt: new Date(record.created_at),
    finishedAt: now,
    timings: { total_ms: Math.max(0, now.getTime() - Date.parse(record.created_at)) },
    outcome,
    usage: finished?.usage ?? {},
    finalMessage: finished?.final_message ?? '',
    finalMessageSource: finished?.final_message_source ?? 'none',
    diff: null,
    violations: [],
    checks: [],
    verdict: 'unverified',
    sandbox: { path: record.sandbox_path, retained: record.sandbox_path !== null },
    secrets: [],
  });
}

/** An unknown queued operation that recovery settled from the runtime's own records. */
export function receiptFromRecovery(record: QueueRecord, finished: RuntimeFinishedData, now = new Date()): Receipt {
  return synthesizeReceipt(record, finished.outcome, { finished, now });
}
