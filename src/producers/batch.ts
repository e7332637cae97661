/**
 * Cross-runtime batches: one mission, N runtimes, compared side by side. Each runtime runs as its
 * own operation `<operation_id>.<runtime>` (so each is idempotent on its own), and the batch
 * record in `<state>/batches/<operation_id>.json` lists them. The comparison is a pure function
 * of the receipts.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ID_PATTERN } from '../shared/contracts/ids.js';
import type { Mission } from '../shared/contracts/mission.js';
import type { Receipt } from '../shared/contracts/receipt.js';
import { invalidInput, UhError } from '../shared/errors.js';
import { writeAtomic } from '../operation/operation-files.js';

export const BatchRecordSchema = z.object({
  schema_version: z.literal('uh.batch.v0'),
  batch_id: z.string(),
  mission_id: z.string(),
  title: z.string(),
  runtimes: z.array(z.string()),
  operations: z.array(z.object({ runtime: z.string(), operation_id: z.string() })),
  created_at: z.string(),
});
export type BatchRecord = z.infer<typeof BatchRecordSchema>;

/** The runtimes of a batch: `--runtimes` if given, else the mission's list. */
export function batchRuntimes(mission: Mission, flag: string | undefined): string[] {
  const fromFlag = flag
    ?.split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const runtimes = fromFlag && fromFlag.length > 0 ? fromFlag : Array.isArray(mission.runtime) ? mission.runtime : [mission.runtime];
  if (new Set(runtimes).size !== runtimes.length) throw invalidInput(`--runtimes: a runtime is listed twice (${runtimes.join(', ')})`);
  if (runtimes.length < 2) throw invalidInput('a batch needs at least two runtimes', [], 'list them in the mission (runtime: [a, b]) or pass --runtimes a,b');
  return runtimes;
}

/** One mission per runtime, each its own operation; overrides keep only that runtime's entry. */
export function batchMissions(mission: Mission, runtimes: readonly string[]): Mission[] {
  return runtimes.map((runtime) => {
    const operationId = `${mission.operation_id}.${runtime}`;
    if (!ID_PATTERN.test(operationId)) {
      throw invalidInput(`operation_id "${operationId}" (operation_id.runtime) is not a valid id`, [], 'shorten operation_id: ids are at most 128 characters');
    }
    const overrides = mission.runtime_config_overrides[runtime];
    return {
      ...mission,
      operation_id: operationId,
      runtime,
      runtime_config_overrides: overrides ? { [runtime]: overrides } : {},
      labels: { ...mission.labels, 'uh.batch': mission.operation_id },
    };
  });
}

export function batchPath(stateDir: string, batchId: string): string {
  return join(stateDir, 'batches', `${batchId}.json`);
}

export function writeBatchRecord(stateDir: string, record: BatchRecord): void {
  mkdirSync(join(stateDir, 'batches'), { recursive: true });
  writeAtomic(batchPath(stateDir, record.batch_id), `${JSON.stringify(record, null, 2)}\n`);
}

export function readBatchRecord(stateDir: string, batchId: string): BatchRecord {
  const path = batchPath(stateDir, batchId);
  if (!existsSync(path)) throw new UhError('not_found', `no batch ${batchId} in ${stateDir}`, { hint: 'run it with: uh batch run <mission> --runtimes a,b' });
  return BatchRecordSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}

export interface ComparisonRow {
  runtime: string;
  operation_id: string;
  status: string;
  verdict: string;
  exit_code: number | null;
  changed_files: number;
  diff_bytes: number;
  checks: string;
  duration_ms: number | null;
  tokens: number | null;
  final_message: string;
}

/** One row per runtime, from its receipt (or its state when it has none). Pure. */
export function compareReceipts(entries: Array<{ runtime: string; operation_id: string; receipt: Receipt | null; state: string }>): ComparisonRow[] {
  return entries.map(({ runtime, operation_id, receipt, state }) => {
    if (!receipt) {
      return { runtime, operation_id, status: state, verdict: '-', exit_code: null, changed_files: 0, diff_bytes: 0, checks: '-', duration_ms: null, tokens: null, final_message: '' };
    }
    const passed = receipt.checks.filter((c) => c.passed).length;
    const u = receipt.usage;
    const tokens = u.total_tokens ?? (u.input_tokens !== undefined || u.output_tokens !== undefined ? (u.input_tokens ?? 0) + (u.output_tokens ?? 0) : null);
    return {
      runtime,
      operation_id,
      status: receipt.status,
      verdict: receipt.verdict,
      exit_code: receipt.exit_code,
      changed_files: receipt.changed_files.length,
      diff_bytes: receipt.diff_bytes,
      checks: receipt.checks.length === 0 ? '-' : `${passed}/${receipt.checks.length}`,
      duration_ms: receipt.timings_ms.total_ms ?? null,
      tokens,
      final_message: receipt.final_message.split('\n')[0]?.slice(0, 80) ?? '',
    };
  });
}

/** 0 when every runtime's operation exited 0, else 1. */
export function batchExitCode(rows: readonly ComparisonRow[]): number {
  return rows.every((r) => r.exit_code === 0) ? 0 : 1;
}
