/**
 * Cross-runtime batches: one mission, N runtimes × T trials, compared side by side. Each
 * runtime × trial runs as its own operation (`<batch>.<runtime>` for one trial,
 * `<batch>.<runtime>.t<k>` for several), so each is idempotent on its own. The batch record
 * (`<state>/batches/<batch>.json` inline, `<prefix>:batch:<batch>` in Redis) is create-once:
 * the same batch again attaches; the same id with other runtimes, trials or mission is a
 * conflict (exit 2). The comparison is a pure function of the receipts (report.ts).
 */
import { z } from 'zod';
import { ID_PATTERN } from '../contracts/ids.js';
import type { Mission } from '../contracts/mission.js';
import { digestOf } from '../digest.js';
import { invalidInput, UhError } from '../errors.js';

export const BatchRecordSchema = z.object({
  schema_version: z.literal('uh.batch.v0'),
  batch_id: z.string(),
  mission_id: z.string(),
  title: z.string(),
  runtimes: z.array(z.string()),
  trials: z.number().int().positive().default(1),
  /** Digest of the mission without its runtime list (the runtimes are compared on their own). */
  mission_digest: z.string().default(''),
  operations: z.array(
    z.object({
      runtime: z.string(),
      trial: z.number().int().positive().default(1),
      operation_id: z.string(),
      /** The suite task this child runs (absent in a one-mission batch). */
      task: z.string().optional(),
    }),
  ),
  /** A suite's task ids in order (empty: a one-mission batch). Other tasks are another batch. */
  tasks: z.array(z.string()).default([]),
  /** The suite's id (a suite batch only). */
  suite_id: z.string().optional(),
  mode: z.enum(['inline', 'queue']).default('inline'),
  created_at: z.string(),
});
export type BatchRecord = z.infer<typeof BatchRecordSchema>;

export const MAX_TRIALS = 20;

/** The runtimes of a batch: `--runtimes` if given, else the mission's list. */
export function batchRuntimes(mission: Mission, flag: string | undefined): string[] {
  const fromFlag = flag
    ?.split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const runtimes =
    fromFlag && fromFlag.length > 0 ? fromFlag : Array.isArray(mission.runtime) ? mission.runtime : [mission.runtime];
  if (new Set(runtimes).size !== runtimes.length)
    throw invalidInput(`--runtimes: a runtime is listed twice (${runtimes.join(', ')})`);
  if (runtimes.length < 2)
    throw invalidInput(
      'a batch needs at least two runtimes',
      [],
      'list them in the mission (runtime: [a, b]) or pass --runtimes a,b',
    );
  return runtimes;
}

export function parseTrials(flag: string | undefined): number {
  const trials = flag === undefined ? 1 : Number(flag);
  if (!Number.isInteger(trials) || trials < 1 || trials > MAX_TRIALS)
    throw invalidInput(`--trials: "${flag}" must be a whole number from 1 to ${MAX_TRIALS}`);
  return trials;
}

/** The operation id of one runtime × trial. */
export function childOperationId(batchId: string, runtime: string, trial: number, trials: number): string {
  return trials === 1 ? `${batchId}.${runtime}` : `${batchId}.${runtime}.t${trial}`;
}

export interface BatchChild {
  runtime: string;
  trial: number;
  mission: Mission;
  /** The suite task (absent in a one-mission batch). */
  task?: string;
}

/** A batch ready to create: its record and every child's mission (task × runtime × trial). */
export interface BatchPlan {
  record: BatchRecord;
  children: BatchChild[];
}

/** The plan of a one-mission batch: runtimes × trials. */
export function planMissionBatch(
  mission: Mission,
  runtimes: string[],
  trials: number,
  mode: 'inline' | 'queue',
): BatchPlan {
  return {
    record: newBatchRecord(mission, runtimes, trials, mode),
    children: batchMissions(mission, runtimes, trials),
  };
}

/** One mission per runtime × trial, each its own operation; overrides keep only that runtime's entry. */
export function batchMissions(mission: Mission, runtimes: readonly string[], trials = 1): BatchChild[] {
  return runtimes.flatMap((runtime) =>
    Array.from({ length: trials }, (_, i) => {
      const operationId = childOperationId(mission.operation_id, runtime, i + 1, trials);
      if (!ID_PATTERN.test(operationId)) {
        throw invalidInput(
          `operation_id "${operationId}" (operation_id.runtime[.tN]) is not a valid id`,
          [],
          'shorten operation_id: ids are at most 128 characters',
        );
      }
      const overrides = mission.runtime_config_overrides[runtime];
      const child: Mission = {
        ...mission,
        operation_id: operationId,
        runtime,
        runtime_config_overrides: overrides ? { [runtime]: overrides } : {},
        labels: { ...mission.labels, 'uh.batch': mission.operation_id, 'uh.batch.trial': String(i + 1) },
      };
      return { runtime, trial: i + 1, mission: child };
    }),
  );
}

export function newBatchRecord(
  mission: Mission,
  runtimes: string[],
  trials: number,
  mode: 'inline' | 'queue',
): BatchRecord {
  const { runtime: _runtime, ...rest } = mission;
  return {
    schema_version: 'uh.batch.v0',
    batch_id: mission.operation_id,
    mission_id: mission.mission_id,
    title: mission.title,
    runtimes,
    trials,
    mission_digest: digestOf(rest),
    operations: batchMissions(mission, runtimes, trials).map((c) => ({
      runtime: c.runtime,
      trial: c.trial,
      operation_id: c.mission.operation_id,
    })),
    tasks: [],
    mode,
    created_at: new Date().toISOString(),
  };
}

/** What makes two submissions of a batch id the same batch. */
export function batchIdentity(record: BatchRecord): string {
  return digestOf({
    runtimes: record.runtimes,
    trials: record.trials,
    mission_digest: record.mission_digest,
    ...(record.tasks.length > 0 ? { tasks: record.tasks } : {}),
  });
}

/** Throws `conflict` (exit 2) naming what differs when `wanted` is not the batch `existing`. */
export function assertSameBatch(existing: BatchRecord, wanted: BatchRecord): void {
  if (batchIdentity(existing) === batchIdentity(wanted)) return;
  const differs: string[] = [];
  if (existing.runtimes.join(',') !== wanted.runtimes.join(','))
    differs.push(`runtimes: existing ${existing.runtimes.join(',')}, submitted ${wanted.runtimes.join(',')}`);
  if (existing.trials !== wanted.trials)
    differs.push(`trials: existing ${existing.trials}, submitted ${wanted.trials}`);
  if (existing.tasks.join(',') !== wanted.tasks.join(','))
    differs.push(`tasks: existing ${existing.tasks.join(',') || '-'}, submitted ${wanted.tasks.join(',') || '-'}`);
  if (existing.mission_digest !== wanted.mission_digest)
    differs.push(
      `mission digest: existing ${existing.mission_digest.slice(0, 19)}…, submitted ${wanted.mission_digest.slice(0, 19)}…`,
    );
  throw new UhError(
    'conflict',
    `batch ${existing.batch_id} already exists with other ${differs.map((d) => d.split(':')[0]).join(', ')}`,
    {
      details: differs,
      hint: 'a batch is never overwritten: use a new operation_id for another batch',
    },
  );
}
