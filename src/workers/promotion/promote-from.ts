/**
 * A promotion's inputs from where the operation lives: the local state dir (inline runs, or the
 * worker's own dir) or Redis (queue mode, from any host: the receipt and the diff artifact,
 * materialised to a private temp file). Used by `uh mission promote`, the inline executor and
 * the results worker.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Person } from '../../shared/contracts/promotion.js';
import { ReceiptSchema } from '../../shared/contracts/receipt.js';
import type { ReceiptKeySource } from '../../operation/receipt-signature.js';
import { requireTrustedReceipt } from '../../operation/trusted-receipt.js';
import { UhError } from '../../shared/errors.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';
import {
  promoteOperation,
  type PromoteRequest,
  type PromoteResult,
  type PromotionRecords,
} from '../../promotion/promote-operation.js';
import { notFinishedRefusal, policyRefusal } from '../../promotion/promotion-policy.js';
import { fileRecords, redisRecords } from '../../promotion/promotion-records.js';
import { operationDir, readRecord } from '../../operation/operation-files.js';
import { promotionTarget } from './promotion-target.js';

export interface PromoteOptions {
  operationId: string;
  branch?: string | undefined;
  /** Push after the branch is made; `remote` defaults to `origin`. */
  push?: { remote?: string | undefined } | null;
  allowUnverified?: boolean;
  identity: { author: Person; committer: Person };
  via: PromoteRequest['via'];
  cacheDir: string;
  /** The key the receipt must verify with: an unsigned or forged receipt is never promoted (exit 6). */
  receiptKey: ReceiptKeySource;
}

function parseOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

async function promoteWith(
  text: string,
  patchPath: string,
  records: PromotionRecords,
  options: PromoteOptions,
): Promise<PromoteResult> {
  // The policy first (a refusal must not fetch a mirror or write anything); then the signature:
  // nothing is promoted from a receipt that does not verify.
  const claimed = ReceiptSchema.safeParse(parseOrNull(text));
  const refusal = claimed.success ? policyRefusal(claimed.data, options.allowUnverified === true) : null;
  if (refusal) throw refusal;
  const receipt = requireTrustedReceipt(text, options.receiptKey, options.operationId);
  return promoteOperation({
    receipt,
    patchPath,
    repository: await promotionTarget(receipt, options.cacheDir),
    branch: options.branch,
    push: options.push ? { remote: options.push.remote ?? 'origin' } : null,
    allowUnverified: options.allowUnverified === true,
    identity: options.identity,
    via: options.via,
    records,
  });
}

/** Promote an operation of a local state dir (its receipt, `diff.patch`, and `promotion.json` beside them). */
export async function promoteFromStateDir(stateDir: string, options: PromoteOptions): Promise<PromoteResult> {
  const id = options.operationId;
  const dir = operationDir(stateDir, id);
  const path = join(dir, 'receipt.json');
  if (!existsSync(path)) {
    const record = readRecord(stateDir, id);
    if (!record)
      throw new UhError('not_found', `no operation ${id} in ${stateDir}`, {
        hint: 'check the id (uh mission list), pass --state-dir, or --redis for queue mode',
      });
    throw notFinishedRefusal(id, record.state);
  }

  return promoteWith(readFileSync(path, 'utf8'), join(dir, 'diff.patch'), fileRecords(dir), options);
}

/** Promote a queue-mode operation from Redis; the record goes to Redis. */
export async function promoteFromStore(store: OperationStore, options: PromoteOptions): Promise<PromoteResult> {
  const id = options.operationId;
  const record = await store.get(id);
  if (!record)
    throw new UhError('not_found', `no operation ${id} in Redis (prefix ${store.prefix})`, {
      hint: 'check the id (uh mission list --redis) and UH_REDIS_PREFIX',
    });
  const artifacts = await store.artifacts(id);
  if (record.state !== 'finished' || !artifacts.receipt) throw notFinishedRefusal(id, record.state);
  const scratch = mkdtempSync(join(tmpdir(), 'uh-promote-diff-'));
  try {
    const patchPath = join(scratch, 'diff.patch');
    writeFileSync(patchPath, artifacts.diff ?? '');
    return await promoteWith(artifacts.receipt, patchPath, redisRecords(store, id), options);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
