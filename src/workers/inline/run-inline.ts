/**
 * The inline executor: one process, no Redis. Idempotent on operation_id like the queue: the same
 * contract attaches to the existing operation (its receipt), another contract is a conflict.
 */
import type { PriceTable } from '../../shared/prices.js';
import { setTimeout as delay } from 'node:timers/promises';
import type { Mission } from '../../shared/contracts/mission.js';
import { OperationConflictError, UhError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { prepareOperation, type PreparedOperation } from '../../operation/prepare-operation.js';
import { executeOperation, type ExecuteResult } from '../execute-operation.js';
import { OPERATION_PORTS } from '../operation-ports.js';
import { sweepSandboxes } from '../sandbox/retention.js';
import { claimOperationDir, readReceipt, readRecord, workerAlive, type OperationRecord } from '../../operation/operation-files.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { automaticPromotion, type PromotionRecord } from '../../shared/contracts/promotion.js';
import { silentLogger } from '../../shared/logger.js';
import type { ReceiptKeySource } from '../../operation/receipt-signature.js';
import type { PoolSettings } from '../sandbox/sandbox-pool.js';

export interface InlineOptions {
  stateDir: string;
  cacheDir: string;
  runtime?: string;
  signal?: AbortSignal;
  keepSandbox?: boolean;
  /** Where the receipt signing key comes from (default: Ed25519 `<cacheDir>/receipt-signing.pem`). */
  receiptKey?: ReceiptKeySource;
  prices?: PriceTable;
  sandboxKeepHours?: number;
  /** The warm pool (`UH_SANDBOX_POOL_*`), shared with other processes through the cache dir; unset = none. */
  sandboxPool?: PoolSettings;
  /** `UH_ISOLATION` (default auto). */
  isolation?: 'auto' | 'require' | 'off';
  /** `UH_ISOLATION_TMPFS_BYTES` (default 1 GiB). */
  isolationTmpfsBytes?: number;
  logger?: Logger;
  env?: Record<string, string | undefined>;
}

export type InlineOutcome =
  | ({ kind: 'ran'; prepared: PreparedOperation; promotion: PromotionRecord | null } & Extract<ExecuteResult, { state: 'finished' }>)
  | { kind: 'attached'; receipt: Receipt; dir: string }
  | { kind: 'in_progress'; record: OperationRecord }
  | { kind: 'unknown'; record: OperationRecord };

export async function runInline(mission: Mission, options: InlineOptions): Promise<InlineOutcome> {
  // Start-up collection: expired sandboxes and orphans left by crashed runs.
  await sweepSandboxes(options.cacheDir, new Date()).catch(() => undefined);
  const prepared = await prepareOperation(mission, options, OPERATION_PORTS);
  const id = mission.operation_id;
  if (!claimOperationDir(options.stateDir, id)) {
    let record = readRecord(options.stateDir, id);
    for (let i = 0; record === null && i < 40; i++) {
      await delay(50); // the winner writes operation.json right after claiming the dir
      record = readRecord(options.stateDir, id);
    }
    if (record === null) {
      throw new UhError('conflict', `operation ${id} exists in ${options.stateDir} but has no record`, {
        hint: `inspect ${options.stateDir}/operations/${id}; use a new operation_id`,
      });
    }
    if (record.contract_digest !== prepared.contractDigest) {
      throw new OperationConflictError(id, record.contract_digest, prepared.contractDigest);
    }
    const receipt = readReceipt(options.stateDir, id);
    if (receipt) return { kind: 'attached', receipt, dir: `${options.stateDir}/operations/${id}` };
    return { kind: workerAlive(record) ? 'in_progress' : 'unknown', record };
  }
  const result = await executeOperation({
    prepared,
    stateDir: options.stateDir,
    cacheDir: options.cacheDir,
    mode: 'inline',
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.keepSandbox !== undefined ? { keepSandbox: options.keepSandbox } : {}),
    ...(options.receiptKey ? { receiptKey: options.receiptKey } : {}),
    ...(options.prices ? { prices: options.prices } : {}),
    ...(options.sandboxKeepHours !== undefined ? { sandboxKeepHours: options.sandboxKeepHours } : {}),
    ...(options.sandboxPool ? { sandboxPool: options.sandboxPool } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.isolation ? { isolation: options.isolation } : {}),
    ...(options.isolationTmpfsBytes ? { isolationTmpfsBytes: options.isolationTmpfsBytes } : {}),
  });
  if (result.state === 'unknown') {
    const record = readRecord(options.stateDir, id);
    if (!record) throw new UhError('internal', `operation ${id} lost its record`);
    return { kind: 'unknown', record };
  }
  // Automatic promotion (mission `promotion: branch`) on verified: the single hook of the inline path.
  // The promotion code loads only for a mission that asks for automatic promotion.
  const promotion =
    automaticPromotion(mission.promotion) === null
      ? null
      : await (await import('../promotion/auto-promote.js')).promoteAfterRun({ setting: mission.promotion, receipt: result.receipt, stateDir: options.stateDir, cacheDir: options.cacheDir, logger: options.logger ?? silentLogger, env: options.env ?? {} });
  return { kind: 'ran', prepared, promotion, ...result };
}
