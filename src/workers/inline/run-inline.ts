/**
 * The inline executor: one process, no Redis. Idempotent on operation_id like the queue: the same
 * contract attaches to the existing operation (its receipt), another contract is a conflict.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Mission } from '../../shared/contracts/mission.js';
import { OperationConflictError, UhError } from '../../shared/errors.js';
import { prepareOperation, type PreparedOperation } from '../../operation/prepare-operation.js';
import { executeOperation, type ExecuteResult } from '../execute-operation.js';
import { operationPorts } from '../operation-ports.js';
import { sweepSandboxes } from '../sandbox/retention.js';
import {
  claimOperationDir,
  readReceipt,
  readRecord,
  workerAlive,
  type OperationRecord,
} from '../../operation/operation-files.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { automaticPromotion, type PromotionRecord } from '../../shared/contracts/promotion.js';
import { hostSettings, type OperationSettings } from '../../operation/settings.js';

/** For the resident uh, which runs inline missions one after another (root-only-paths.ts). */
export { keepHostWalksWarm } from '../sandbox/root-only-paths.js';

export interface InlineOptions {
  /** The host's settings, compiled once (src/operation/settings.ts). */
  settings: OperationSettings;
  /** `--runtime`: which of the mission's runtimes to run. */
  runtime?: string;
  signal?: AbortSignal;
}

export type InlineOutcome =
  | ({ kind: 'ran'; prepared: PreparedOperation; promotion: PromotionRecord | null } & Extract<
      ExecuteResult,
      { state: 'finished' }
    >)
  | { kind: 'attached'; receipt: Receipt; dir: string }
  | { kind: 'in_progress'; record: OperationRecord }
  | { kind: 'unknown'; record: OperationRecord };

export async function runInline(mission: Mission, options: InlineOptions): Promise<InlineOutcome> {
  const { settings } = options;
  const { stateDir, cacheDir } = settings;
  // Start-up collection: expired sandboxes and orphans left by crashed runs.
  await sweepSandboxes(cacheDir, new Date()).catch(() => undefined);
  const host = hostSettings(settings);
  const prepared = await prepareOperation(
    mission,
    { stateDir, cacheDir, host, ...(options.runtime ? { runtime: options.runtime } : {}) },
    operationPorts(settings),
  );
  const id = mission.operation_id;
  if (!claimOperationDir(stateDir, id)) return existingOperation(stateDir, id, prepared);
  const result = await executeOperation({
    prepared,
    settings,
    mode: 'inline',
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (result.state !== 'finished') {
    const record = readRecord(stateDir, id);
    if (!record) throw new UhError('internal', `operation ${id} lost its record`);
    return { kind: 'unknown', record };
  }
  // Automatic promotion (mission `promotion: branch`) on verified: the single hook of the inline path.
  // The promotion code loads only for a mission that asks for automatic promotion.
  const promotion =
    automaticPromotion(mission.promotion) === null
      ? null
      : await (
          await import('../promotion/auto-promote.js')
        ).promoteAfterRun({
          setting: mission.promotion,
          receipt: result.receipt,
          stateDir,
          cacheDir,
          logger: settings.logger,
          env: settings.env,
          receiptKey: settings.receiptKey,
        });
  return { kind: 'ran', prepared, promotion, ...result };
}

/** Another process claimed the operation dir: attach to its receipt, or say it is in progress or unknown. */
async function existingOperation(stateDir: string, id: string, prepared: PreparedOperation): Promise<InlineOutcome> {
  let record = readRecord(stateDir, id);
  for (let i = 0; record === null && i < 40; i++) {
    await delay(50); // the winner writes operation.json right after claiming the dir
    record = readRecord(stateDir, id);
  }
  if (record === null) {
    throw new UhError('conflict', `operation ${id} exists in ${stateDir} but has no record`, {
      hint: `inspect ${stateDir}/operations/${id}; use a new operation_id`,
    });
  }
  if (record.contract_digest !== prepared.contractDigest) {
    throw new OperationConflictError(id, record.contract_digest, prepared.contractDigest);
  }
  const receipt = readReceipt(stateDir, id);
  if (receipt) return { kind: 'attached', receipt, dir: `${stateDir}/operations/${id}` };
  return { kind: workerAlive(record) ? 'in_progress' : 'unknown', record };
}
