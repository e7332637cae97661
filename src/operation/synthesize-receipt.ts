/**
 * A receipt for an operation that settles without running the pipeline: a job cancelled while
 * waiting, a job whose preparation failed on the worker, an unknown operation settled by
 * `uh mission recover`. Same schema as every receipt; no diff, no checks, no sandbox.
 */
import { hostname } from 'node:os';
import type { Mission } from '../shared/contracts/mission.js';
import { ReceiptSchema, type Receipt } from '../shared/contracts/receipt.js';
import type { Outcome } from '../shared/contracts/runtime-result.js';
import { exitCodeFor } from '../shared/contracts/status.js';
import type { QueueRecord } from '../shared/queue/operation-store.js';

export function synthesizeReceipt(record: QueueRecord, outcome: Outcome, now = new Date()): Receipt {
  const mission = record.job.mission as Mission;
  const verdict = 'unverified' as const;
  return ReceiptSchema.parse({
    schema_version: 'uh.receipt.v0',
    operation_id: record.operation_id,
    mission_id: record.mission_id,
    title: mission.title,
    contract_digest: record.contract_digest,
    prompt_digest: record.prompt_digest,
    repository: { url: mission.repository.url, ref: mission.repository.ref, base_commit: record.base_commit },
    head_commit: null,
    runtime: {
      adapter_id: record.runtime,
      runtime_kind: record.runtime,
      session_id: record.session_id,
      thread_id: record.thread_id,
      turn_id: record.turn_id,
    },
    attempt: record.attempt,
    worker: { host: record.worker?.host ?? hostname(), pid: record.worker?.pid ?? process.pid, mode: 'queue' },
    started_at: record.created_at,
    finished_at: now.toISOString(),
    timings_ms: { total_ms: Math.max(0, now.getTime() - Date.parse(record.created_at)) },
    status: outcome.status,
    outcome,
    verdict,
    changed_files: [],
    diff_digest: 'none',
    diff_bytes: 0,
    scope: { ok: true, violations: [] },
    checks: [],
    usage: {},
    final_message: '',
    final_message_source: 'none',
    exit_code: exitCodeFor(outcome.status, verdict),
    sandbox: { path: record.sandbox_path, retained: record.sandbox_path !== null },
    labels: mission.labels ?? {},
  });
}
