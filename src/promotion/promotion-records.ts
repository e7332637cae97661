/**
 * Where promotion records live: `promotion.json` beside the receipt in an operation dir, and in
 * queue mode the `promotion` field of the operation's artifacts hash in Redis. A record is
 * rewritten atomically; the first store that has one answers `load`, `save` writes to all.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PromotionRecordSchema } from '../shared/contracts/promotion.js';
import type { OperationStore } from '../shared/queue/operation-store.js';
import type { PromotionRecords } from './promote-operation.js';

export const PROMOTION_FILE = 'promotion.json';

export function fileRecords(operationDir: string): PromotionRecords {
  const path = join(operationDir, PROMOTION_FILE);
  return {
    load: async () => (existsSync(path) ? PromotionRecordSchema.parse(JSON.parse(readFileSync(path, 'utf8'))) : null),
    save: async (record) => {
      const tmp = `${path}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
      renameSync(tmp, path);
    },
  };
}

export function redisRecords(store: OperationStore, operationId: string): PromotionRecords {
  return {
    load: async () => {
      const text = await store.promotion(operationId);
      return text ? PromotionRecordSchema.parse(JSON.parse(text)) : null;
    },
    save: (record) => store.savePromotion(operationId, `${JSON.stringify(record, null, 2)}\n`),
  };
}

export function bothRecords(...stores: PromotionRecords[]): PromotionRecords {
  return {
    load: async () => {
      for (const store of stores) {
        const record = await store.load();
        if (record) return record;
      }
      return null;
    },
    save: async (record) => {
      for (const store of stores) await store.save(record);
    },
  };
}
