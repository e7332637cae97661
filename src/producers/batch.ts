/** Inline batches: the create-once batch record file `<state>/batches/<batch>.json`. */
import { existsSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UhError } from '../shared/errors.js';
import { assertSameBatch, BatchRecordSchema, type BatchRecord } from '../shared/batch/record.js';
import { makeDir } from '../shared/fs/make-dir.js';

export function batchPath(stateDir: string, batchId: string): string {
  return join(stateDir, 'batches', `${batchId}.json`);
}

/**
 * Create the record once (hard link of a complete temp file: never a partial or overwritten
 * record). Returns `attached` with the existing record when the same batch exists; throws
 * `conflict` when another batch has the id.
 */
export function createBatchRecord(
  stateDir: string,
  record: BatchRecord,
): { kind: 'created' | 'attached'; record: BatchRecord } {
  makeDir(join(stateDir, 'batches'));
  const path = batchPath(stateDir, record.batch_id);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
  try {
    linkSync(tmp, path);
    return { kind: 'created', record };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const existing = readBatchRecord(stateDir, record.batch_id);
    assertSameBatch(existing, record);
    return { kind: 'attached', record: existing };
  } finally {
    rmSync(tmp, { force: true });
  }
}

export function readBatchRecord(stateDir: string, batchId: string): BatchRecord {
  const path = batchPath(stateDir, batchId);
  if (!existsSync(path))
    throw new UhError('not_found', `no batch ${batchId} in ${stateDir}`, {
      hint: 'run it with: uh batch run <mission> --runtimes a,b (or uh batch report --redis for a queued batch)',
    });
  return BatchRecordSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}
