/**
 * The inline state layout (documented in docs/state-layout.md):
 *
 *   <state>/operations/<operation_id>/
 *     operation.json       the operation record (state, digests, runtime, sandbox), rewritten atomically
 *     mission.json         the parsed mission, as run
 *     events.jsonl         uh.event.v0, one per line, appended in order
 *     runtime.*.log        runtime output
 *     check-<name>.log     each check's capped output
 *     diff.patch           tracked + untracked changes against the base commit
 *     runtime-final.txt    the final message
 *     runtime-result.yaml  uh.runtime-result.v0
 *     receipt.json         uh.receipt.v0, written once, last
 */
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../shared/process/process-alive.js';
import { z } from 'zod';
import { OperationStateSchema } from '../shared/contracts/status.js';
import { ReceiptSchema, type Receipt } from '../shared/contracts/receipt.js';
import { UhError } from '../shared/errors.js';
import { makeDir } from '../shared/fs/make-dir.js';

export const OperationRecordSchema = z.object({
  schema_version: z.literal('uh.operation.v0'),
  operation_id: z.string(),
  mission_id: z.string(),
  runtime: z.string(),
  contract_digest: z.string(),
  prompt_digest: z.string(),
  state: OperationStateSchema,
  base_commit: z.string().nullable(),
  attempt: z.number().int().positive(),
  created_at: z.string(),
  updated_at: z.string(),
  worker: z.object({ host: z.string(), pid: z.number().int() }).nullable(),
  sandbox_path: z.string().nullable(),
  runtime_started: z.boolean(),
  /** `queue` when a queue worker ran it: the Redis record is then the source of truth. */
  mode: z.enum(['inline', 'queue']).default('inline'),
  status: z.string().nullable(),
  verdict: z.string().nullable(),
  exit_code: z.number().int().nullable(),
  session_id: z.string().nullable().optional(),
  thread_id: z.string().nullable().optional(),
  turn_id: z.string().nullable().optional(),
});
export type OperationRecord = z.infer<typeof OperationRecordSchema>;

/** Artifact name in Redis → file name in an operation dir (also what `collect` writes). */
export const ARTIFACT_FILES = {
  receipt: 'receipt.json',
  diff: 'diff.patch',
  final_message: 'runtime-final.txt',
  runtime_result: 'runtime-result.yaml',
  mission: 'mission.json',
  promotion: 'promotion.json',
} as const;
export type ArtifactName = keyof typeof ARTIFACT_FILES;

/** Each check's capped log travels too: artifact `check_log:<name>` ↔ file `check-<name>.log`. */
export const CHECK_LOG_ARTIFACT = /^check_log:(.+)$/;
export const CHECK_LOG_FILE = /^check-(.+)\.log$/;
export const checkLogArtifact = (name: string): string => `check_log:${name}`;
export const checkLogFile = (name: string): string => `check-${name}.log`;
/** The runtime's own output travels too: artifact `runtime_log:<file>` ↔ file `runtime.<stream>.log`. */
export const RUNTIME_LOG_ARTIFACT = /^runtime_log:(.+)$/;
export const RUNTIME_LOG_FILE = /^runtime\.[A-Za-z0-9_-]+\.log$/;

export function operationsRoot(stateDir: string): string {
  return join(stateDir, 'operations');
}

export function operationDir(stateDir: string, operationId: string): string {
  return join(operationsRoot(stateDir), operationId);
}

/** Make the state dir, ignored by git from inside (`.gitignore` of `*`), so the user's status stays clean. */
export function ensureStateDir(stateDir: string): void {
  makeDir(operationsRoot(stateDir));
  const ignore = join(stateDir, '.gitignore');
  if (!existsSync(ignore)) writeFileSync(ignore, '# uh state: never committed\n*\n');
}

/** Claim the operation dir atomically; false when it already exists. */
export function claimOperationDir(stateDir: string, operationId: string): boolean {
  ensureStateDir(stateDir);
  try {
    mkdirSync(operationDir(stateDir, operationId));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

export function writeAtomic(path: string, content: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, content);
  renameSync(tmp, path);
}

export function writeRecord(stateDir: string, record: OperationRecord): void {
  writeAtomic(
    join(operationDir(stateDir, record.operation_id), 'operation.json'),
    `${JSON.stringify(record, null, 2)}\n`,
  );
}

export function readRecord(stateDir: string, operationId: string): OperationRecord | null {
  const path = join(operationDir(stateDir, operationId), 'operation.json');
  if (!existsSync(path)) return null;
  return OperationRecordSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}

/** Write the receipt once: a second write of the same operation's receipt is refused. */
export function writeReceiptOnce(dir: string, receipt: Receipt): string {
  const path = join(dir, 'receipt.json');
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(receipt, null, 2)}\n`);
  try {
    linkSync(tmp, path); // fails if a receipt exists: receipts are immutable
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new UhError('conflict', `receipt for ${receipt.operation_id} already written`, {
        hint: 'receipts are immutable',
      });
    }
    throw error;
  } finally {
    rmSync(tmp, { force: true });
  }
  return path;
}

export function readReceipt(stateDir: string, operationId: string): Receipt | null {
  const path = join(operationDir(stateDir, operationId), 'receipt.json');
  if (!existsSync(path)) return null;
  return ReceiptSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}

/** Is the process that owns this record still running? (Another host's process: assume so.) */
export function workerAlive(record: OperationRecord): boolean {
  return !record.worker || processAlive(record.worker.host, record.worker.pid);
}
