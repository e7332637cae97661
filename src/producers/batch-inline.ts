/**
 * An inline batch's children as the report reads them, and its automatic retries: as on the
 * fleet (workers/results/retry-errors.ts), a slot whose last attempt is an infrastructure error
 * (ended `unknown`, lost, blocked by the host) gets a new operation `<slot>.r<n>` (never the same
 * operation again), up to `UH_BATCH_ERROR_RETRIES` per slot. The retries are recorded by their
 * operations: `<slot>.r1`, `<slot>.r2`, … in the state dir, each with the label
 * `uh.batch.retry_of`, so running the batch again attaches to them and `uh batch report` finds them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BatchChild, BatchRecord } from '../shared/batch/record.js';
import { trialRow, type ChildInput } from '../shared/batch/report.js';
import { ID_PATTERN } from '../shared/contracts/ids.js';
import type { Mission } from '../shared/contracts/mission.js';
import { operationDir, readReceipt, readRecord } from '../operation/operation-files.js';

/** Bound on the attempts looked up per slot (UH_BATCH_ERROR_RETRIES is smaller in practice). */
const MAX_ATTEMPTS = 20;

function readDiff(stateDir: string, operationId: string): string | null {
  try {
    return readFileSync(join(operationDir(stateDir, operationId), 'diff.patch'), 'utf8');
  } catch {
    return null;
  }
}

/** The retries of a slot that exist in the state dir, in order. */
export function localRetries(stateDir: string, slot: string): string[] {
  const ids: string[] = [];
  for (let n = 1; n <= MAX_ATTEMPTS; n += 1) {
    const id = `${slot}.r${n}`;
    if (!ID_PATTERN.test(id) || readRecord(stateDir, id) === null) break;
    ids.push(id);
  }
  return ids;
}

/** Every attempt of every slot: first attempts, then their retries (a replaced attempt is `superseded`). */
export function localChildren(stateDir: string, record: BatchRecord): ChildInput[] {
  return record.operations.flatMap((o) => {
    const ids = [o.operation_id, ...localRetries(stateDir, o.operation_id)];
    return ids.map((id, i) => ({
      ...o,
      operation_id: id,
      ...(i > 0 ? { retry_of: ids[i - 1] as string } : {}),
      superseded: i < ids.length - 1,
      receipt: readReceipt(stateDir, id),
      state: readRecord(stateDir, id)?.state ?? 'missing',
      diff: readDiff(stateDir, id),
    }));
  });
}

/** Whether an attempt is over and was an infrastructure error. */
function isSettledError(child: ChildInput): boolean {
  if (child.state !== 'finished' && child.state !== 'unknown') return false;
  return trialRow(child, {}).error !== null;
}

/** The retry of `last` (an errored attempt of `slot`), or null when the slot is past the bound. */
export function retryMission(child: BatchChild, last: ChildInput, attempts: number, max: number): Mission | null {
  if (attempts >= max) return null;
  const id = `${child.mission.operation_id}.r${attempts + 1}`;
  if (!ID_PATTERN.test(id)) return null;
  return {
    ...child.mission,
    operation_id: id,
    labels: { ...child.mission.labels, 'uh.batch.retry_of': last.operation_id },
  };
}

/**
 * Run the retries the batch's errored slots are owed, round after round (a retry that errors
 * again is retried while the bound allows); returns how many ran.
 */
export async function retryInlineErrors(
  stateDir: string,
  record: BatchRecord,
  children: readonly BatchChild[],
  max: number,
  run: (mission: Mission) => Promise<void>,
): Promise<number> {
  let made = 0;
  for (let round = 0; round < max; round += 1) {
    const due = children.flatMap((child) => {
      const slot = child.mission.operation_id;
      const op = {
        runtime: child.runtime,
        trial: child.trial,
        operation_id: slot,
        ...(child.task ? { task: child.task } : {}),
      };
      const last = localChildren(stateDir, { ...record, operations: [op] }).at(-1);
      if (!last || !isSettledError(last)) return [];
      const mission = retryMission(child, last, localRetries(stateDir, slot).length, max);
      return mission ? [mission] : [];
    });
    if (due.length === 0) break;
    for (const mission of due) await run(mission);
    made += due.length;
  }
  return made;
}
