/**
 * The operation record's shape (as parsed from its Redis hash), the job payload, the outbox
 * completion entry and the few pure helpers around them. The store is operation-store.ts.
 */
import { z } from 'zod';
import type { EventType, UhEvent } from '../contracts/event.js';
import { OperationStateSchema } from '../contracts/status.js';

const nullable = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? null : v));
const intOrNull = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? null : Number(v)));

/** The record as stored (every hash field is a string); `fromHash` turns it into this shape. */
export const QueueRecordSchema = z.object({
  operation_id: z.string(),
  mission_id: z.string(),
  runtime: z.string(),
  contract_digest: z.string(),
  prompt_digest: z.string(),
  base_commit: z.string(),
  state: OperationStateSchema,
  attempt: z.coerce.number().int().positive(),
  runtime_started: z.string().transform((v) => v === '1'),
  job_id: z.string(),
  /** The tenant the producer submitted under (the API: its token's; the CLI: UH_TENANT); `default` for older records. */
  tenant: z
    .string()
    .optional()
    .transform((v) => v || 'default'),
  created_at: z.string(),
  updated_at: z.string(),
  /** When a worker last claimed it (its queue wait ends here). */
  claimed_at: nullable,
  owner: nullable,
  worker: nullable.transform((v) => (v ? (JSON.parse(v) as { id: string; host: string; pid: number }) : null)),
  cancel_requested: nullable,
  unknown_reason: nullable,
  retry_at: nullable,
  status: nullable,
  verdict: nullable,
  exit_code: intOrNull,
  session_id: nullable,
  thread_id: nullable,
  turn_id: nullable,
  sandbox_path: nullable,
  job: z.string().transform((v) => JSON.parse(v) as OperationJob),
  /** The digest of the operation's artifact manifest in the artifact store (`uh.artifacts.v0`), once settled. */
  artifacts: nullable,
  /** The runtime journal (RuntimeJournalV1) of the current attempt, as JSON. */
  journal: nullable.transform((v) => (v ? (JSON.parse(v) as Record<string, unknown>) : {})),
});
export type QueueRecord = z.infer<typeof QueueRecordSchema>;

/** What a job carries: enough to prepare the operation on any worker host. */
export interface OperationJob {
  operation_id: string;
  runtime: string;
  /** The parsed mission (uh.mission.v0) as the producer validated it. */
  mission: unknown;
  base_commit: string;
  contract_digest: string;
  /** `sha256:…` of the adapter manifest the producer resolved: a worker resolving another refuses the job. */
  manifest_digest?: string;
  attempt: number;
  /** The hidden verifier's bundle (src/operation/hidden-verifier.ts), when the mission has one. */
  hidden_verifier?: unknown;
  /** The submitting tenant (set by the producer from the API token or UH_TENANT, never from the mission); unset: `default`. */
  tenant?: string;
  /** The queue class (`ci`, `normal`, `batch`) when the producer chose it (batch children); else the mission's `priority`. */
  priority?: string;
}

/** The outbox entry of a settled operation (the webhook body adds the receipt). */
export interface Completion {
  operation_id: string;
  state: 'finished' | 'unknown';
  status: string | null;
  verdict: string | null;
  exit_code: number;
  attempt: number;
  runtime: string;
  at: string;
}

export function eventJson(
  operationId: string,
  type: EventType,
  data: Record<string, unknown>,
  now = new Date(),
): string {
  const event: UhEvent = { seq: 0, at: now.toISOString(), operation_id: operationId, type, data };
  return JSON.stringify(event);
}

/**
 * The record as printed (`--json` of status, list, recover, submit): without the job payload,
 * whose mission may carry secrets in runtime_config_overrides (the worker needs them; output
 * that lands in CI logs must not show them).
 */
export function publicRecord(record: QueueRecord): Omit<QueueRecord, 'job'> {
  const { job: _job, ...rest } = record;
  return rest;
}

/** The completion entry for a record (the outbox and unknown transitions share it). */
export function completionOf(
  record: Pick<QueueRecord, 'operation_id' | 'attempt' | 'runtime'>,
  patch: Partial<Completion> = {},
): Completion {
  return {
    operation_id: record.operation_id,
    state: 'unknown',
    status: null,
    verdict: null,
    exit_code: 5,
    attempt: record.attempt,
    runtime: record.runtime,
    at: new Date().toISOString(),
    ...patch,
  };
}
