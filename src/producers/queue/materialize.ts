/**
 * Write an operation's artifacts from Redis into a local dir (the producer's state dir after
 * `--wait`, or `collect --out`): receipt.json, diff.patch, runtime-final.txt,
 * runtime-result.yaml, mission.json, check-<name>.log for each check, events.jsonl. Works on any host that reaches Redis.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ReceiptSchema, type Receipt } from '../../shared/contracts/receipt.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';
import {
  ARTIFACT_FILES,
  CHECK_LOG_ARTIFACT,
  RUNTIME_LOG_ARTIFACT,
  RUNTIME_LOG_FILE,
  checkLogFile,
} from '../../operation/operation-files.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface Materialized {
  dir: string;
  files: string[];
  /** The receipt parsed; null when there is none or it is not a receipt (an untrusted text: check `receiptText`). */
  receipt: Receipt | null;
  /** The receipt as stored: what its signature covers. */
  receiptText: string | null;
}

/** A stored receipt text parsed, or null when it is not JSON or not a receipt (never trusted then). */
function parsedReceipt(text: string): Receipt | null {
  try {
    const got = ReceiptSchema.safeParse(JSON.parse(text));
    return got.success ? got.data : null;
  } catch {
    return null;
  }
}

/** The receipt as stored (the raw text, which its signature covers) and parsed. */
export async function readReceiptFromStore(store: OperationStore, operationId: string): Promise<Receipt | null> {
  return (await readReceiptWithText(store, operationId))?.receipt ?? null;
}

export async function readReceiptWithText(
  store: OperationStore,
  operationId: string,
): Promise<{ receipt: Receipt | null; text: string } | null> {
  const text = await store.artifact(operationId, 'receipt');
  return text ? { receipt: parsedReceipt(text), text } : null;
}

/** The file a log artifact is written to (`check_log:<name>` → check-<name>.log, `runtime_log:<file>`), or null. */
function logFileOf(name: string): string | null {
  const check = CHECK_LOG_ARTIFACT.exec(name)?.[1];
  if (check !== undefined) return check.includes('/') ? null : checkLogFile(check);
  const runtime = RUNTIME_LOG_ARTIFACT.exec(name)?.[1];
  return runtime !== undefined && RUNTIME_LOG_FILE.test(runtime) ? runtime : null;
}

export async function materialize(store: OperationStore, operationId: string, dir: string): Promise<Materialized> {
  makeDir(dir);
  const artifacts = await store.artifacts(operationId);
  const files: string[] = [];
  for (const [name, file] of Object.entries(ARTIFACT_FILES)) {
    const text = artifacts[name];
    if (text === undefined) continue;
    writeFileSync(join(dir, file), text);
    files.push(join(dir, file));
  }
  for (const [name, text] of Object.entries(artifacts)) {
    const file = logFileOf(name);
    if (file === null) continue;
    writeFileSync(join(dir, file), text);
    files.push(join(dir, file));
  }
  // A settled operation's transcript is in the artifact store; a running one's events are in the stream.
  const transcript = artifacts.events ?? (await store.streamEvents(operationId)).map((l) => `${l}\n`).join('');
  writeFileSync(join(dir, 'events.jsonl'), transcript);
  files.push(join(dir, 'events.jsonl'));
  const receiptText = artifacts.receipt ?? null;
  return { dir, files, receipt: receiptText === null ? null : parsedReceipt(receiptText), receiptText };
}
