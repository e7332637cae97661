/**
 * A queued batch in Redis: `<prefix>:batch:<id>` holds the record (create-once with HSETNX, so
 * a batch is never overwritten), its state (`running` → `settled`, or `cancelled`) and, once
 * settled, the report (JSON and HTML). Settling is one script: the first settler writes the
 * report and one `batch` entry on the outbox (the results consumer turns it into the
 * `batch.settled` webhook); a second settler changes nothing.
 */
import type { Redis } from 'ioredis';
import { assertSameBatch, BatchRecordSchema, type BatchRecord } from '../batch/record.js';
import { ReceiptSchema } from '../contracts/receipt.js';
import type { ChildInput } from '../batch/report.js';
import { UhError } from '../errors.js';
import type { OperationStore } from './operation-store.js';
import type { QueueKeys } from './topology.js';

export interface StoredBatch {
  record: BatchRecord;
  state: 'running' | 'settled' | 'cancelled';
  settled_at: string | null;
  /** Per first-attempt operation id, the retries of its infrastructure errors in order (fields `retry:<op>`). */
  retries: Record<string, string[]>;
}

const SETTLE_BATCH = `
if redis.call('HGET', KEYS[1], 'settled_at') then return 0 end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'settled_at', ARGV[2], 'report_json', ARGV[3], 'report_html', ARGV[4])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', '1000000', '*', 'batch', ARGV[5])
return 1`;

export class BatchStore {
  constructor(
    readonly redis: Redis,
    readonly keys: QueueKeys,
  ) {}

  /** Create, or attach to the same batch; another batch under the id is a `conflict` (exit 2). */
  async createOrAttach(record: BatchRecord): Promise<{ kind: 'created' | 'attached'; batch: StoredBatch }> {
    const key = this.keys.batch(record.batch_id);
    const created = await this.redis.hsetnx(key, 'record', JSON.stringify(record));
    if (created === 1) {
      await this.redis
        .multi()
        .hsetnx(key, 'state', 'running')
        .zadd(this.keys.batches, Date.now(), record.batch_id)
        .exec();
      return { kind: 'created', batch: { record, state: 'running', settled_at: null, retries: {} } };
    }
    const existing = await this.require(record.batch_id);
    assertSameBatch(existing.record, record);
    return { kind: 'attached', batch: existing };
  }

  async get(batchId: string): Promise<StoredBatch | null> {
    const h = await this.redis.hgetall(this.keys.batch(batchId));
    if (!h.record) return null;
    const retries: Record<string, string[]> = {};
    for (const [field, value] of Object.entries(h))
      if (field.startsWith('retry:')) retries[field.slice('retry:'.length)] = JSON.parse(value) as string[];
    return {
      record: BatchRecordSchema.parse(JSON.parse(h.record)),
      state: (h.state as StoredBatch['state']) ?? 'running',
      settled_at: h.settled_at || null,
      retries,
    };
  }

  /** Record the attempts of one slot (its first operation id → the retries, in order). */
  async recordRetries(batchId: string, first: string, retries: readonly string[]): Promise<void> {
    await this.redis.hset(this.keys.batch(batchId), `retry:${first}`, JSON.stringify(retries));
  }

  async require(batchId: string): Promise<StoredBatch> {
    const batch = await this.get(batchId);
    if (!batch)
      throw new UhError(
        'not_found',
        `no batch ${batchId} in Redis (prefix ${this.keys.bullPrefix.replace(/:bull$/, '')})`,
        { hint: 'submit it with: uh batch submit <mission> --runtimes a,b' },
      );
    return batch;
  }

  /** The most recent batches (newest first), each with its state; bounded by `limit`. */
  async list(limit: number): Promise<
    Array<{
      batch_id: string;
      title: string;
      state: StoredBatch['state'];
      tasks: number;
      runtimes: string[];
      trials: number;
      created_at: string;
    }>
  > {
    const ids = await this.redis.zrevrange(this.keys.batches, 0, limit - 1);
    const batches = await Promise.all(ids.map((id) => this.get(id)));
    return batches
      .filter((b): b is StoredBatch => b !== null)
      .map((b) => ({
        batch_id: b.record.batch_id,
        title: b.record.title,
        state: b.state,
        tasks: b.record.tasks.length,
        runtimes: b.record.runtimes,
        trials: b.record.trials,
        created_at: b.record.created_at,
      }));
  }

  async report(batchId: string, format: 'json' | 'html'): Promise<string | null> {
    return this.redis.hget(this.keys.batch(batchId), format === 'json' ? 'report_json' : 'report_html');
  }

  /** First settler wins: stores the report and emits one `batch` outbox entry. */
  async settle(
    batchId: string,
    state: 'settled' | 'cancelled',
    reportJson: string,
    reportHtml: string,
    outboxJson: string,
    now = new Date(),
  ): Promise<boolean> {
    const done = await this.redis.eval(
      SETTLE_BATCH,
      2,
      this.keys.batch(batchId),
      this.keys.outbox,
      state,
      now.toISOString(),
      reportJson,
      reportHtml,
      outboxJson,
    );
    return done === 1;
  }
}

/**
 * Each child's state, receipt and diff, as the report needs them: every attempt of every slot
 * (a retried error, then its retry), all but the last attempt `superseded`.
 */
export async function loadBatchChildren(
  ops: OperationStore,
  record: BatchRecord,
  retries: Record<string, string[]> = {},
): Promise<ChildInput[]> {
  const attempts = record.operations.flatMap((o) => {
    const ids = [o.operation_id, ...(retries[o.operation_id] ?? [])];
    return ids.map((id, i) => ({
      ...o,
      operation_id: id,
      ...(i > 0 ? { retry_of: ids[i - 1] as string } : {}),
      superseded: i < ids.length - 1,
    }));
  });
  return Promise.all(
    attempts.map(async (o) => {
      const [op, artifacts] = await Promise.all([
        ops.get(o.operation_id),
        ops.artifacts(o.operation_id, ['receipt', 'diff']),
      ]);
      const parsed = artifacts.receipt ? ReceiptSchema.safeParse(JSON.parse(artifacts.receipt)) : null;
      return {
        ...o,
        state: op?.state ?? 'missing',
        receipt: parsed?.success ? parsed.data : null,
        diff: artifacts.diff ?? null,
      };
    }),
  );
}

/** The batch a child operation belongs to (its mission's `uh.batch` label), or null. */
export async function batchOfOperation(ops: OperationStore, operationId: string): Promise<string | null> {
  const record = await ops.get(operationId);
  const mission = record?.job.mission as { labels?: Record<string, string> } | undefined;
  return mission?.labels?.['uh.batch'] ?? null;
}
