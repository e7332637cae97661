/**
 * Our durable operation record in Redis: the source of truth for "has this operation run?",
 * kept after BullMQ removes the job (forever, unless an operator deletes it). Every transition
 * is one Lua script (operation-scripts.ts), so races between producers, workers and
 * cancellers resolve in Redis, not in process memory.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { UhEvent, EventType } from '../contracts/event.js';
import { OperationStateSchema } from '../contracts/status.js';
import { CLAIM, CREATE_OR_ATTACH, MARK_RUNTIME_STARTED, NEXT_ATTEMPT, ORPHANED, REQUEST_CANCEL, SETTLE, UPDATE_IF_OWNER } from './operation-scripts.js';
import { keysFor, type QueueKeys } from './topology.js';

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
  created_at: z.string(),
  updated_at: z.string(),
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
  attempt: number;
}

export type CreateResult = { kind: 'created' } | { kind: 'attached'; state: string } | { kind: 'conflict'; digest: string };
export type ClaimResult = { kind: 'run'; cancelReason: string | null } | { kind: 'settled'; state: string } | { kind: 'unknown' } | { kind: 'stale' } | { kind: 'missing' };

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

const SCRIPTS = {
  uhCreateOrAttach: [2, CREATE_OR_ATTACH],
  uhClaim: [3, CLAIM],
  uhMarkRuntimeStarted: [1, MARK_RUNTIME_STARTED],
  uhUpdateIfOwner: [1, UPDATE_IF_OWNER],
  uhSettle: [4, SETTLE],
  uhRequestCancel: [1, REQUEST_CANCEL],
  uhNextAttempt: [2, NEXT_ATTEMPT],
  uhOrphaned: [3, ORPHANED],
} as const;

type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;
type Scripted = Redis & { [K in keyof typeof SCRIPTS]: ScriptFn };


const pairs = (o: Record<string, string | number | null | undefined>): string[] =>
  Object.entries(o).flatMap(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]);

export function eventJson(operationId: string, type: EventType, data: Record<string, unknown>, now = new Date()): string {
  const event: UhEvent = { seq: 0, at: now.toISOString(), operation_id: operationId, type, data };
  return JSON.stringify(event);
}

export class OperationStore {
  readonly keys: QueueKeys;
  private readonly r: Scripted;

  constructor(
    readonly redis: Redis,
    readonly prefix: string,
  ) {
    this.keys = keysFor(prefix);
    for (const [name, [numberOfKeys, lua]] of Object.entries(SCRIPTS)) {
      if (!(name in redis)) redis.defineCommand(name, { numberOfKeys, lua });
    }
    this.r = redis as Scripted;
  }

  /** Atomic create-or-attach: same digest attaches (forever), another digest is a conflict. */
  async createOrAttach(job: OperationJob, fields: { mission_id: string; prompt_digest: string }, now = new Date()): Promise<CreateResult> {
    const record = {
      operation_id: job.operation_id,
      mission_id: fields.mission_id,
      runtime: job.runtime,
      contract_digest: job.contract_digest,
      prompt_digest: fields.prompt_digest,
      base_commit: job.base_commit,
      state: 'queued',
      attempt: job.attempt,
      runtime_started: '0',
      job_id: '',
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      job: JSON.stringify(job),
    };
    const { jobIdFor } = await import('./topology.js');
    record.job_id = jobIdFor(job.operation_id, job.attempt);
    const [kind, value] = (await this.r.uhCreateOrAttach(
      this.keys.op(job.operation_id),
      this.keys.index,
      job.contract_digest,
      now.getTime(),
      job.operation_id,
      ...pairs(record),
    )) as [string, string];
    if (kind === 'created') return { kind };
    if (kind === 'attached') return { kind, state: value };
    return { kind: 'conflict', digest: value };
  }

  async get(operationId: string): Promise<QueueRecord | null> {
    const hash = await this.redis.hgetall(this.keys.op(operationId));
    if (Object.keys(hash).length === 0) return null;
    return QueueRecordSchema.parse(hash);
  }

  async claim(operationId: string, owner: string, worker: { id: string; host: string; pid: number }, jobId: string, completion: Completion): Promise<ClaimResult> {
    const now = new Date();
    const [kind, value] = (await this.r.uhClaim(
      this.keys.op(operationId),
      this.keys.outbox,
      this.keys.events(operationId),
      owner,
      JSON.stringify(worker),
      now.toISOString(),
      jobId,
      eventJson(operationId, 'operation.unknown', { reason: 'the job was re-delivered after its runtime had started', worker: worker.id }, now),
      JSON.stringify({ ...completion, state: 'unknown', at: now.toISOString() }),
    )) as [string, string];
    switch (kind) {
      case 'run':
        return { kind, cancelReason: value === '' ? null : value };
      case 'settled':
        return { kind, state: value };
      default:
        return { kind: kind as 'unknown' | 'stale' | 'missing' };
    }
  }

  async markRuntimeStarted(operationId: string, owner: string): Promise<'ok' | 'lost' | 'cancelled'> {
    return (await this.r.uhMarkRuntimeStarted(this.keys.op(operationId), owner, new Date().toISOString())) as 'ok' | 'lost' | 'cancelled';
  }

  async updateIfOwner(operationId: string, owner: string, patch: Record<string, string | number | null | undefined>): Promise<boolean> {
    const n = await this.r.uhUpdateIfOwner(this.keys.op(operationId), owner, ...pairs({ ...patch, updated_at: new Date().toISOString() }));
    return n === 1;
  }

  /** The terminal write: record, artifacts, one outbox entry and one event, all or nothing. */
  async settle(
    operationId: string,
    input: {
      owner: string | null;
      allowedStates: string[];
      record: Record<string, string | number | null>;
      artifacts: Record<string, string>;
      event: string | null;
      completion: Completion | null;
    },
  ): Promise<boolean> {
    const recordPairs = pairs({ ...input.record, updated_at: new Date().toISOString() });
    const n = await this.r.uhSettle(
      this.keys.op(operationId),
      this.keys.artifacts(operationId),
      this.keys.outbox,
      this.keys.events(operationId),
      input.owner ?? '',
      input.allowedStates.join(','),
      input.event ?? '',
      input.completion ? JSON.stringify(input.completion) : '',
      recordPairs.length / 2,
      ...recordPairs,
      ...pairs(input.artifacts),
    );
    return n === 1;
  }

  async requestCancel(operationId: string, reason: string): Promise<{ kind: 'requested' | 'settled' | 'missing'; state: string; jobId: string }> {
    const [kind, state, jobId] = (await this.r.uhRequestCancel(this.keys.op(operationId), reason, new Date().toISOString())) as [string, string, string];
    if (kind === 'requested') await this.redis.publish(this.keys.cancelChannel, operationId);
    return { kind: kind as 'requested' | 'settled' | 'missing', state, jobId };
  }

  async nextAttempt(operationId: string, owner: string, attempt: number, jobId: string, previousReceipt: string, retryAt: Date): Promise<boolean> {
    const n = await this.r.uhNextAttempt(
      this.keys.op(operationId),
      this.keys.attempts(operationId),
      owner,
      new Date().toISOString(),
      attempt,
      jobId,
      previousReceipt,
      retryAt.toISOString(),
    );
    return n === 1;
  }

  /** The owner is gone (stalled past BullMQ's limit, or dead per recover): unknown or back to queued. */
  async orphaned(operationId: string, reason: string, completion: Completion, owner: string | null = null): Promise<'unknown' | 'queued' | ''> {
    const now = new Date();
    return (await this.r.uhOrphaned(
      this.keys.op(operationId),
      this.keys.outbox,
      this.keys.events(operationId),
      now.toISOString(),
      reason,
      eventJson(operationId, 'operation.unknown', { reason }, now),
      JSON.stringify({ ...completion, state: 'unknown', at: now.toISOString() }),
      owner ?? '',
    )) as 'unknown' | 'queued' | '';
  }

  async appendEvent(operationId: string, json: string): Promise<void> {
    await this.redis.xadd(this.keys.events(operationId), 'MAXLEN', '~', '100000', '*', 'event', json);
  }

  async artifacts(operationId: string): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.artifacts(operationId));
  }

  /** Operation ids newest first. */
  async listIds(limit = 1000): Promise<string[]> {
    return this.redis.zrevrange(this.keys.index, 0, limit - 1);
  }

  async attempts(operationId: string): Promise<string[]> {
    return this.redis.lrange(this.keys.attempts(operationId), 0, -1);
  }
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
export function completionOf(record: Pick<QueueRecord, 'operation_id' | 'attempt' | 'runtime'>, patch: Partial<Completion> = {}): Completion {
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
