/**
 * Write an operation's artifacts from Redis into a local dir (the producer's state dir after
 * `--wait`, or `collect --out`): receipt.json, diff.patch, runtime-final.txt,
 * runtime-result.yaml, mission.json, check-<name>.log for each check, events.jsonl. Works on any host that reaches Redis.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ReceiptSchema, type Receipt } from '../../shared/contracts/receipt.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';
import { ARTIFACT_FILES, CHECK_LOG_ARTIFACT, checkLogFile } from '../../operation/operation-files.js';
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
  const text = await store.redis.hget(store.keys.artifacts(operationId), 'receipt');
  return text ? { receipt: parsedReceipt(text), text } : null;
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
    const check = CHECK_LOG_ARTIFACT.exec(name)?.[1];
    if (check === undefined || check.includes('/')) continue;
    writeFileSync(join(dir, checkLogFile(check)), text);
    files.push(join(dir, checkLogFile(check)));
  }
  const entries = await store.redis.xrange(store.keys.events(operationId), '-', '+');
  const lines = entries
    .flatMap(([, fields]) => (fields.includes('event') ? [fields[fields.indexOf('event') + 1] ?? ''] : []))
    .filter(Boolean);
  writeFileSync(join(dir, 'events.jsonl'), lines.map((l) => `${l}\n`).join(''));
  files.push(join(dir, 'events.jsonl'));
  const receiptText = artifacts.receipt ?? null;
  return { dir, files, receipt: receiptText === null ? null : parsedReceipt(receiptText), receiptText };
}
