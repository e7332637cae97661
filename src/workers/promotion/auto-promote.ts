/**
 * Automatic promotion: a mission with `promotion: branch` (or `{branch, push, remote}`) is
 * promoted when it finishes `verified`, with no human: inline right after the receipt, in queue
 * mode by the results worker when it takes the completion from the outbox (at least once, so
 * promotion's idempotence makes a redelivery harmless). A failure never changes the
 * operation's verdict: it is logged and recorded (`decision: refused` with the reason).
 */
import { hostname, userInfo } from 'node:os';
import { automaticPromotion, type MissionPromotion, type PromotionRecord } from '../../shared/contracts/promotion.js';
import type { ReceiptKeySource } from '../../operation/receipt-signature.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { digestOf } from '../../shared/digest.js';
import { errorMessage } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';
import type { PromoteResult, PromotionRecords } from '../../promotion/promote-operation.js';
import { promotionIdentity } from '../../promotion/promotion-identity.js';
import { fileRecords, redisRecords } from '../../promotion/promotion-records.js';
import { scrubText } from '../../promotion/promotion-git.js';
import { operationDir } from '../../operation/operation-files.js';
import { promoteFromStateDir, promoteFromStore, type PromoteOptions } from './promote-from.js';

type Via = PromotionRecord['promoted_by']['via'];

async function autoPromote(
  setting: MissionPromotion,
  receipt: Pick<Receipt, 'operation_id' | 'status' | 'verdict'> & Partial<Receipt>,
  via: Via,
  records: PromotionRecords,
  logger: Logger,
  identity: ReturnType<typeof promotionIdentity>,
  run: (options: Omit<PromoteOptions, 'cacheDir' | 'receiptKey'>) => Promise<PromoteResult>,
): Promise<PromotionRecord | null> {
  const wanted = automaticPromotion(setting);
  if (!wanted || receipt.status !== 'completed' || receipt.verdict !== 'verified') return null;
  try {
    const { record } = await run({
      operationId: receipt.operation_id,
      branch: wanted.branch,
      push: wanted.push ? { remote: wanted.remote } : null,
      identity,
      via,
    });
    logger.info({ operation_id: receipt.operation_id, branch: record.branch, commit: record.commit }, 'promoted');
    return record;
  } catch (error) {
    const reason = scrubText(errorMessage(error));
    logger.warn({ operation_id: receipt.operation_id, reason }, 'automatic promotion failed');
    const current = await records.load().catch(() => null);
    const record =
      current?.decision === 'promoted'
        ? { ...current, reason }
        : refused(receipt, wanted.branch, reason, via, identity);
    await records.save(record).catch(() => undefined);
    return record;
  }
}

function refused(
  receipt: Pick<Receipt, 'operation_id' | 'verdict'> & Partial<Receipt>,
  branch: string,
  reason: string,
  via: Via,
  identity: ReturnType<typeof promotionIdentity>,
): PromotionRecord {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry
  }
  return {
    schema_version: 'uh.promotion.v0',
    operation_id: receipt.operation_id,
    decision: 'refused',
    reason,
    verdict: receipt.verdict,
    branch,
    commit: null,
    tree: null,
    base_commit: receipt.repository?.base_commit ?? null,
    receipt_digest: receipt.schema_version ? digestOf(receipt) : 'none',
    tree_verified: false,
    repository: { url: scrubText(receipt.repository?.url ?? ''), kind: 'local' },
    pushed: null,
    promoted_by: { user, host: hostname(), via },
    promoted_at: new Date().toISOString(),
    author: identity.author,
    committer: identity.committer,
    mergeable: null,
  };
}

/** What the promoting process brings: its cache dir, logger, configuration and the key receipts verify with. */
export interface AutoPromoteContext {
  cacheDir: string;
  logger: Logger;
  /** Supplies UH_PROMOTION_AUTHOR / UH_PROMOTION_COMMITTER (the promoting process's configuration). */
  env: Readonly<Record<string, string | undefined>>;
  receiptKey: ReceiptKeySource;
}

/** Inline: right after `executeOperation` wrote the receipt. */
export async function promoteAfterRun(
  args: AutoPromoteContext & { setting: MissionPromotion; receipt: Receipt; stateDir: string },
): Promise<PromotionRecord | null> {
  const records = fileRecords(operationDir(args.stateDir, args.receipt.operation_id));
  const identity = promotionIdentity({}, args.env);
  return autoPromote(args.setting, args.receipt, 'inline', records, args.logger, identity, (options) =>
    promoteFromStateDir(args.stateDir, { ...options, cacheDir: args.cacheDir, receiptKey: args.receiptKey }),
  );
}

/**
 * Queue mode: the results worker, for each completion whose receipt it has verified. What to
 * promote comes from that signed receipt (`promotion`), never from a record or artifact in Redis.
 */
export async function promoteAfterCompletion(
  store: OperationStore,
  receipt: Receipt,
  args: AutoPromoteContext,
): Promise<PromotionRecord | null> {
  const setting = receipt.promotion ?? 'none';
  if (automaticPromotion(setting) === null) return null;
  const records = redisRecords(store, receipt.operation_id);
  const identity = promotionIdentity({}, args.env);
  return autoPromote(setting, receipt, 'results-worker', records, args.logger, identity, (options) =>
    promoteFromStore(store, { ...options, cacheDir: args.cacheDir, receiptKey: args.receiptKey }),
  );
}
