/**
 * Queue topology and every Redis key Ultimate Harness writes (docs/queue.md, "Keys").
 * All keys share one prefix (`UH_REDIS_PREFIX`, default `uh`), so a fleet, a test file or a
 * benchmark can live beside others on one Redis and be removed with one SCAN. `<p>` below is the
 * prefix as a Redis Cluster hash tag, `{uh}`: every key of a fleet hashes to one slot, so the Lua
 * scripts' multi-key writes (record + outbox + events) and BullMQ's scripts run unchanged on a
 * Cluster (docs/deploy.md, "Redis Cluster").
 *
 *   <p>:bull:runtime.<id>:*   BullMQ's own keys: one queue per runtime
 *   <p>:op:<op>               hash: our durable operation record (source of truth, kept forever)
 *   <p>:op:<op>:events        stream: uh.event.v0 of the operation, live
 *   <p>:op:<op>:artifacts     hash: receipt, diff.patch (capped), final message, runtime result, mission
 *   <p>:op:<op>:attempts      list: receipts of earlier attempts (rate-limit retries)
 *   <p>:ops                   sorted set: operation ids by creation time (uh mission list)
 *   <p>:running               set: operation ids claimed and not settled (added by claim, removed by
 *                             settle/orphaned/next attempt; the owner watch scans it, whatever the runtime)
 *   <p>:outbox                stream: one entry per settled operation; consumer group `results`
 *   <p>:outbox:dead           stream: completions whose webhook failed every attempt
 *   <p>:cancel                pub/sub channel: operation ids to cancel (the flag lives in the record)
 *   <p>:worker:<id>           string with TTL: a live worker's heartbeat
 *   <p>:bull:batch:*          BullMQ's keys of the batch queue: one flow parent per batch
 *   <p>:batch:<batch>         hash: a batch's record (create-once), state, settled report
 *   <p>:batches               sorted set: batch ids by creation time
 */

/** BullMQ rejects queue names with ":"; runtime ids never contain one. */
export function queueName(runtimeId: string): string {
  return `runtime.${runtimeId}`;
}

/**
 * The BullMQ job id of an operation's attempt. Operation ids match `[A-Za-z0-9._-]`, so the
 * `op.` prefix makes the id never all digits and never contain ":" (both rejected by BullMQ);
 * `@` cannot occur in an operation id, so attempts never collide with another operation.
 */
export function jobIdFor(operationId: string, attempt = 1): string {
  return attempt === 1 ? `op.${operationId}` : `op.${operationId}@${attempt}`;
}

/** `op.<id>` / `op.<id>@<attempt>` → `<id>` (the inverse of jobIdFor); null for another job id. */
export function operationOfJob(jobId: string): string | null {
  const m = /^op\.([A-Za-z0-9._-]+?)(?:@\d+)?$/.exec(jobId);
  return m?.[1] ?? null;
}

export const RESULTS_GROUP = 'results';

/** The queue of batch flow parents (processed by the results worker); its job id is `batch.<id>`. */
export const BATCH_QUEUE = 'batch';
export function batchJobId(batchId: string): string {
  return `batch.${batchId}`;
}

/** The prefix as a hash tag: `uh` → `{uh}`. */
export function taggedPrefix(prefix: string): string {
  return `{${prefix}}`;
}

export function keysFor(plain: string) {
  const prefix = taggedPrefix(plain);
  return {
    bullPrefix: `${prefix}:bull`,
    op: (id: string) => `${prefix}:op:${id}`,
    events: (id: string) => `${prefix}:op:${id}:events`,
    /** A settled record's long fields, deflated (compact-record.ts). */
    overflow: (id: string) => `${prefix}:op:${id}:overflow`,
    artifacts: (id: string) => `${prefix}:op:${id}:artifacts`,
    attempts: (id: string) => `${prefix}:op:${id}:attempts`,
    index: `${prefix}:ops`,
    running: `${prefix}:running`,
    /** Settled operations whose artifacts are in the store, by settle time: the event-retention pass reads it. */
    settled: `${prefix}:settled`,
    outbox: `${prefix}:outbox`,
    outboxDead: `${prefix}:outbox:dead`,
    cancelChannel: `${prefix}:cancel`,
    worker: (id: string) => `${prefix}:worker:${id}`,
    batch: (id: string) => `${prefix}:batch:${id}`,
    batches: `${prefix}:batches`,
  };
}
export type QueueKeys = ReturnType<typeof keysFor>;

/** An operation job's tenant (`default` when the producer set none). */
export function tenantOf(job: { tenant?: string }): string {
  return job.tenant || 'default';
}

/**
 * A mission's `priority` as BullMQ queue order: `ci` jobs are added with `lifo` (to the end of the
 * wait list workers take from: before every waiting job); `normal` (unset) and `batch` are FIFO.
 * Not BullMQ's `priority` option: BullMQ keeps prioritised jobs in a sorted set it reads only
 * when the wait list is empty, and the KEDA triggers (infra/k8s) and the queue-age metric count
 * the wait list; every job stays in it this way.
 */
export const MISSION_PRIORITIES = ['ci', 'normal', 'batch'] as const;
export type MissionPriority = (typeof MISSION_PRIORITIES)[number];

const isPriority = (v: unknown): v is MissionPriority =>
  typeof v === 'string' && (MISSION_PRIORITIES as readonly string[]).includes(v);

/** The job's class: what the producer set (a batch child: `batch` unless its mission says), else the mission's, else normal. */
export function priorityOf(job: { mission: unknown; priority?: string }): MissionPriority {
  const asked = (job.mission as { priority?: unknown } | null)?.priority;
  return isPriority(job.priority) ? job.priority : isPriority(asked) ? asked : 'normal';
}

/** The BullMQ add options of the job's class: `{lifo: true}` for CI, none otherwise. */
export function jobOrder(job: { mission: unknown; priority?: string }): { lifo?: true } {
  return priorityOf(job) === 'ci' ? { lifo: true } : {};
}

/**
 * Jobs are bookkeeping only (our record is the truth): only the last few completed jobs are kept
 * (a day at most), so bull-board can show recent missions by their verdict while Redis stays
 * bounded (~2 KB a job, a fixed cost whatever the fleet settles); a failed one (a stall past the
 * limit, for an operator) is kept a week.
 */
export const COMPLETED_JOBS_KEPT = { count: 5, age: 24 * 3600 } as const;
export const JOB_OPTIONS = {
  attempts: 1,
  removeOnComplete: COMPLETED_JOBS_KEPT,
  removeOnFail: { age: 7 * 24 * 3600 },
} as const;
