/**
 * Our durable operation record in Redis: the source of truth for "has this operation run?",
 * kept after BullMQ removes the job (forever, unless an operator deletes it). Every transition
 * is one Lua script (operation-scripts.ts), so races between producers, workers and
 * cancellers resolve in Redis, not in process memory.
 */
import type { Redis } from 'ioredis';
import { eventJson, QueueRecordSchema, type Completion, type OperationJob, type QueueRecord } from './queue-record.js';
import {
  CLAIM,
  CREATE_OR_ATTACH,
  MARK_RUNTIME_STARTED,
  NEXT_ATTEMPT,
  ORPHANED,
  PRUNE_RUNNING,
  REQUEST_CANCEL,
  SETTLE,
  UPDATE_IF_OWNER,
} from './operation-scripts.js';
import { UhError } from '../errors.js';
import { compactRecord, expandRecord } from './compact-record.js';
import { jobIdFor, keysFor, tenantOf, type QueueKeys } from './topology.js';
import type { ArtifactStore } from '../artifacts/artifact-store.js';

export * from './queue-record.js';

export type CreateResult =
  { kind: 'created' } | { kind: 'attached'; state: string } | { kind: 'conflict'; digest: string };
export type ClaimResult =
  | { kind: 'run'; cancelReason: string | null }
  | { kind: 'settled'; state: string }
  | { kind: 'unknown' }
  | { kind: 'stale' }
  | { kind: 'missing' }
  | { kind: 'over_quota'; running: number };

/** Per-tenant limits on running operations across the fleet (UH_TENANT_QUOTAS); null: no limit. */
export interface TenantQuotas {
  default: number | null;
  tenants: Record<string, number>;
}

const SCRIPTS = {
  uhCreateOrAttach: [2, CREATE_OR_ATTACH],
  uhClaim: [4, CLAIM],
  uhMarkRuntimeStarted: [1, MARK_RUNTIME_STARTED],
  uhUpdateIfOwner: [1, UPDATE_IF_OWNER],
  uhSettle: [7, SETTLE],
  uhRequestCancel: [1, REQUEST_CANCEL],
  uhNextAttempt: [3, NEXT_ATTEMPT],
  uhOrphaned: [4, ORPHANED],
  uhPruneRunning: [2, PRUNE_RUNNING],
} as const;

function createResultOf([kind, value]: [string, string]): CreateResult {
  if (kind === 'created') return { kind };
  if (kind === 'attached') return { kind, state: value };
  return { kind: 'conflict', digest: value === '' || value.startsWith('sha256:') ? value : `sha256:${value}` };
}

type ScriptFn = (...args: (string | number | Buffer)[]) => Promise<unknown>;
type Scripted = Redis & { [K in keyof typeof SCRIPTS]: ScriptFn };

function recordOf(hash: Record<string, string>, overflow: Buffer | null): QueueRecord | null {
  if (Object.keys(hash).length === 0) return null;
  return QueueRecordSchema.parse(expandRecord(hash, overflow));
}

const pick = (o: Record<string, string>, names: readonly string[]): Record<string, string> =>
  Object.fromEntries(Object.entries(o).filter(([k]) => names.includes(k)));

const pairsOf = (o: Record<string, string | number | null | undefined>): Array<[string, string]> =>
  Object.entries(o).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]);

const pairs = (o: Record<string, string | number | null | undefined>): string[] =>
  Object.entries(o).flatMap(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]);

export class OperationStore {
  readonly keys: QueueKeys;
  private readonly r: Scripted;

  constructor(
    readonly redis: Redis,
    readonly prefix: string,
    /**
     * Where settled operations' artifacts go (receipt, diff, logs, events transcript): the record
     * then holds one pointer. Without one (tests of the record alone), artifacts stay in Redis.
     */
    readonly artifactStore: ArtifactStore | null = null,
  ) {
    this.keys = keysFor(prefix);
    for (const [name, [numberOfKeys, lua]] of Object.entries(SCRIPTS)) {
      if (!(name in redis)) redis.defineCommand(name, { numberOfKeys, lua });
    }
    this.r = redis as Scripted;
  }

  /** Atomic create-or-attach: same digest attaches (forever), another digest is a conflict. */
  async createOrAttach(
    job: OperationJob,
    fields: { mission_id: string; prompt_digest: string },
    now = new Date(),
  ): Promise<CreateResult> {
    return createResultOf((await this.r.uhCreateOrAttach(...this.createArgs(job, fields, now))) as [string, string]);
  }

  /** `createOrAttach` of many operations in one pipeline (one round trip); results in order. */
  async createOrAttachMany(
    entries: ReadonlyArray<{ job: OperationJob; mission_id: string; prompt_digest: string }>,
    now = new Date(),
  ): Promise<CreateResult[]> {
    const pipeline = this.redis.pipeline() as unknown as {
      uhCreateOrAttach: (...args: (string | number)[]) => void;
      exec: () => Promise<Array<[Error | null, unknown]> | null>;
    };
    for (const e of entries) pipeline.uhCreateOrAttach(...this.createArgs(e.job, e, now));
    return ((await pipeline.exec()) ?? []).map(([error, reply]) => {
      if (error) throw error;
      return createResultOf(reply as [string, string]);
    });
  }

  private createArgs(
    job: OperationJob,
    fields: { mission_id: string; prompt_digest: string },
    now: Date,
  ): (string | number)[] {
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
      job_id: jobIdFor(job.operation_id, job.attempt),
      tenant: tenantOf(job),
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      job: JSON.stringify(job),
    };
    return [
      this.keys.op(job.operation_id),
      this.keys.index,
      job.contract_digest,
      now.getTime(),
      job.operation_id,
      tenantOf(job),
      ...pairs(record),
    ];
  }

  /** Many records in one pipeline; null for a missing one. */
  async getMany(operationIds: readonly string[]): Promise<Array<QueueRecord | null>> {
    const pipeline = this.redis.pipeline();
    for (const id of operationIds) pipeline.hgetall(this.keys.op(id)).getBuffer(this.keys.overflow(id));
    const replies = (await pipeline.exec()) ?? [];
    return operationIds.map((_, i) => {
      const [[error, hash], [overflowError, overflow]] = [
        replies[2 * i] ?? [null, {}],
        replies[2 * i + 1] ?? [null, null],
      ];
      if (error) throw error;
      if (overflowError) throw overflowError;
      return recordOf(hash as Record<string, string>, overflow as Buffer | null);
    });
  }

  /** Events of many operations in one pipeline: `[operation_id, event json]`. */
  async appendEvents(entries: ReadonlyArray<readonly [string, string]>): Promise<void> {
    if (entries.length === 0) return;
    const pipeline = this.redis.pipeline();
    for (const [id, json] of entries) pipeline.xadd(this.keys.events(id), 'MAXLEN', '~', '100000', '*', 'event', json);
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
  }

  async get(operationId: string): Promise<QueueRecord | null> {
    return (await this.getMany([operationId]))[0] ?? null;
  }

  async claim(
    operationId: string,
    owner: string,
    worker: { id: string; host: string; pid: number },
    jobId: string,
    completion: Completion,
    quotas: TenantQuotas | null = null,
  ): Promise<ClaimResult> {
    const now = new Date();
    const [kind, value] = (await this.r.uhClaim(
      this.keys.op(operationId),
      this.keys.outbox,
      this.keys.events(operationId),
      this.keys.running,
      owner,
      JSON.stringify(worker),
      now.toISOString(),
      jobId,
      eventJson(
        operationId,
        'operation.unknown',
        { reason: 'the job was re-delivered after its runtime had started', worker: worker.id },
        now,
      ),
      JSON.stringify({ ...completion, state: 'unknown', at: now.toISOString() }),
      operationId,
      quotas ? JSON.stringify(quotas) : '',
      this.keys.op(''),
    )) as [string, string];
    switch (kind) {
      case 'over_quota':
        return { kind, running: Number(value) };
      case 'run':
        return { kind, cancelReason: value === '' ? null : value };
      case 'settled':
        return { kind, state: value };
      default:
        return { kind: kind as 'unknown' | 'stale' | 'missing' };
    }
  }

  async markRuntimeStarted(operationId: string, owner: string): Promise<'ok' | 'lost' | 'cancelled'> {
    return (await this.r.uhMarkRuntimeStarted(this.keys.op(operationId), owner, new Date().toISOString())) as
      'ok' | 'lost' | 'cancelled';
  }

  async updateIfOwner(
    operationId: string,
    owner: string,
    patch: Record<string, string | number | null | undefined>,
  ): Promise<boolean> {
    const n = await this.r.uhUpdateIfOwner(
      this.keys.op(operationId),
      owner,
      ...pairs({ ...patch, updated_at: new Date().toISOString() }),
    );
    return n === 1;
  }

  /**
   * The terminal write: record, artifacts, one outbox entry and one event, all or nothing. With an
   * artifact store, the artifacts and the event transcript (the stream so far plus `event`) are
   * written there FIRST and the record gets their manifest's digest in the same script that
   * settles it: a crash in between leaves an unreferenced blob, never a pointer to nothing.
   */
  async settle(
    operationId: string,
    input: {
      owner: string | null;
      allowedStates: string[];
      record: Record<string, string | number | null>;
      artifacts: Record<string, string>;
      event: string | null;
      completion: Completion | null;
      /** The attempt settled (names the manifest); default 1. */
      attempt?: number;
    },
  ): Promise<boolean> {
    let record: Record<string, string | number | null> = { ...input.record, updated_at: new Date().toISOString() };
    let artifacts = input.artifacts;
    let compact: { replace: string; overflow: Buffer } = { replace: '0', overflow: Buffer.alloc(0) };
    if (this.artifactStore) {
      const events = [...(await this.streamEvents(operationId)), ...(input.event ? [input.event] : [])];
      const files = { ...artifacts, events: events.map((e) => `${e}\n`).join('') };
      const pointer = await this.artifactStore.putOperation(operationId, input.attempt ?? 1, files);
      artifacts = {};
      // The whole settled record, compact: read now, rewritten by the script only if its checks pass.
      const current = await this.redis.hgetall(this.keys.op(operationId));
      const settled = compactRecord({ ...current, ...Object.fromEntries(pairsOf(record)), artifacts: pointer });
      record = settled.hash;
      compact = { replace: '1', overflow: settled.overflow };
    }
    const recordPairs = pairs(record);
    const n = await this.r.uhSettle(
      this.keys.op(operationId),
      this.keys.artifacts(operationId),
      this.keys.outbox,
      this.keys.events(operationId),
      this.keys.running,
      this.keys.settled,
      this.keys.overflow(operationId),
      input.owner ?? '',
      input.allowedStates.join(','),
      input.event ?? '',
      input.completion ? JSON.stringify(input.completion) : '',
      recordPairs.length / 2,
      operationId,
      compact.replace,
      compact.overflow,
      ...recordPairs,
      ...pairs(artifacts),
    );
    return n === 1;
  }

  /** The `uh.event.v0` JSON lines in the operation's Redis stream, in order (empty once trimmed). */
  async streamEvents(operationId: string): Promise<string[]> {
    const out: string[] = [];
    for (let from = '-'; ;) {
      const page = await this.redis.xrange(this.keys.events(operationId), from, '+', 'COUNT', 1000);
      for (const [, fields] of page) {
        const i = fields.indexOf('event');
        if (i >= 0 && fields[i + 1] !== undefined) out.push(fields[i + 1] as string);
      }
      if (page.length < 1000) return out;
      from = `(${page[page.length - 1]?.[0] ?? '0-0'}`;
    }
  }

  async requestCancel(
    operationId: string,
    reason: string,
  ): Promise<{ kind: 'requested' | 'settled' | 'missing'; state: string; jobId: string }> {
    const [kind, state, jobId] = (await this.r.uhRequestCancel(
      this.keys.op(operationId),
      reason,
      new Date().toISOString(),
    )) as [string, string, string];
    if (kind === 'requested') await this.redis.publish(this.keys.cancelChannel, operationId);
    return { kind: kind as 'requested' | 'settled' | 'missing', state, jobId };
  }

  async nextAttempt(
    operationId: string,
    owner: string,
    attempt: number,
    jobId: string,
    previousReceipt: string,
    retryAt: Date,
  ): Promise<boolean> {
    const n = await this.r.uhNextAttempt(
      this.keys.op(operationId),
      this.keys.attempts(operationId),
      this.keys.running,
      owner,
      new Date().toISOString(),
      attempt,
      jobId,
      previousReceipt,
      retryAt.toISOString(),
      operationId,
    );
    return n === 1;
  }

  /** The owner is gone (stalled past BullMQ's limit, or dead per recover): unknown or back to queued. */
  async orphaned(
    operationId: string,
    reason: string,
    completion: Completion,
    owner: string | null = null,
  ): Promise<'unknown' | 'queued' | ''> {
    const now = new Date();
    return (await this.r.uhOrphaned(
      this.keys.op(operationId),
      this.keys.outbox,
      this.keys.events(operationId),
      this.keys.running,
      now.toISOString(),
      reason,
      eventJson(operationId, 'operation.unknown', { reason }, now),
      JSON.stringify({ ...completion, state: 'unknown', at: now.toISOString() }),
      owner ?? '',
      operationId,
    )) as 'unknown' | 'queued' | '';
  }

  async appendEvent(operationId: string, json: string): Promise<void> {
    await this.redis.xadd(this.keys.events(operationId), 'MAXLEN', '~', '100000', '*', 'event', json);
  }

  /**
   * The operation's artifacts (names → contents): from the artifact store when its record holds a
   * pointer (every byte verified against its digest), plus what stays in Redis (`promotion`, and
   * every artifact of a record settled before the store existed).
   */
  async artifacts(operationId: string, only?: readonly string[]): Promise<Record<string, string>> {
    const [hex, inRedis] = await Promise.all([
      this.redis.hget(this.keys.op(operationId), 'artifacts'),
      this.redis.hgetall(this.keys.artifacts(operationId)),
    ]);
    const pointer = hex && !hex.startsWith('sha256:') ? `sha256:${hex}` : hex;
    if (!pointer) return only ? pick(inRedis, only) : inRedis;
    const stored = await this.requireStore(pointer).readAll(pointer, only);
    return { ...(only ? pick(inRedis, only) : inRedis), ...stored };
  }

  /** One artifact (`receipt`, `diff`, `events`, …), or null when the operation has none by that name. */
  async artifact(operationId: string, name: string): Promise<string | null> {
    return (await this.artifacts(operationId, [name]))[name] ?? null;
  }

  /** The operation's events as JSON lines: the live stream, else (trimmed by retention) the stored transcript. */
  async eventLines(operationId: string): Promise<string[]> {
    const live = await this.streamEvents(operationId);
    if (live.length > 0) return live;
    const transcript = await this.artifact(operationId, 'events');
    return transcript === null ? [] : transcript.split('\n').filter((l) => l !== '');
  }

  private requireStore(pointer: string): ArtifactStore {
    if (this.artifactStore) return this.artifactStore;
    throw new UhError(
      'internal',
      `the artifacts of this operation are in an artifact store (${pointer}) this process has none of`,
      {
        hint: "set UH_ARTIFACT_STORE (and UH_ARTIFACT_STORE_S3_FILE) as on the fleet's workers",
      },
    );
  }

  /**
   * Retention: settled operations whose artifacts (the event transcript among them) are in the
   * store lose their Redis event stream `retentionMs` after settling. Bounded per pass.
   */
  async trimSettledEvents(retentionMs: number, now = Date.now(), limit = 1000): Promise<number> {
    const ids = await this.redis.zrangebyscore(this.keys.settled, '-inf', now - retentionMs, 'LIMIT', 0, limit);
    if (ids.length === 0) return 0;
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.del(this.keys.events(id));
    pipeline.zrem(this.keys.settled, ...ids);
    for (const [error] of (await pipeline.exec()) ?? []) if (error) throw error;
    return ids.length;
  }

  /** The operation's `uh.promotion.v0` record (JSON), kept beside its artifacts; null before any promotion. */
  async promotion(operationId: string): Promise<string | null> {
    return this.redis.hget(this.keys.artifacts(operationId), 'promotion');
  }

  async savePromotion(operationId: string, json: string): Promise<void> {
    await this.redis.hset(this.keys.artifacts(operationId), 'promotion', json);
  }

  /** Operations claimed and not yet settled (the running index the owner watch scans). */
  async runningIds(): Promise<string[]> {
    return this.redis.smembers(this.keys.running);
  }

  /** Drop an id from the running index if its record is no longer running (pruned, settled elsewhere). */
  async pruneRunning(operationId: string): Promise<boolean> {
    return (await this.r.uhPruneRunning(this.keys.running, this.keys.op(operationId), operationId)) === 1;
  }

  /** Operation ids newest first. */
  async listIds(limit = 1000): Promise<string[]> {
    return this.redis.zrevrange(this.keys.index, 0, limit - 1);
  }

  async attempts(operationId: string): Promise<string[]> {
    return this.redis.lrange(this.keys.attempts(operationId), 0, -1);
  }
}
