import { UhError } from '../../shared/errors.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';
import type { RuntimeJournalV1 } from '../../shared/runtime/v1/runtime-context.js';

/**
 * The queue-mode runtime journal: the `journal` field of the operation record in Redis, so the
 * facts a runtime proves identity with (thread id, baseline turn ids…) survive the worker and are
 * shown by `uh mission recover`. Only the record's owner may write; puts of one journal are
 * serialised here (read, merge, owner-checked write), so a put is durable when it resolves.
 */
export function redisJournal(store: OperationStore, operationId: string, owner: string): RuntimeJournalV1 {
  let chain: Promise<unknown> = Promise.resolve();
  const read = async (): Promise<Record<string, unknown>> => {
    const text = await store.redis.hget(store.keys.op(operationId), 'journal');
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
  return {
    get: read,
    put(patch) {
      const next = chain.then(async () => {
        const merged = { ...(await read()), ...patch };
        if (!(await store.updateIfOwner(operationId, owner, { journal: JSON.stringify(merged) }))) {
          throw new UhError(
            'conflict',
            `journal of ${operationId} not written: this worker no longer owns the operation`,
          );
        }
      });
      chain = next.catch(() => undefined);
      return next;
    },
  };
}
