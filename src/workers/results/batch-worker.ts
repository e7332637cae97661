/**
 * The batch queue's worker, run by `uh worker start --results`: a batch is a BullMQ flow whose
 * parent job (`batch.<id>` on the `batch` queue) becomes processable once every child
 * operation job has completed (a pool completes an operation's job whatever the mission's
 * outcome, unknown included). Processing it settles the batch when every child operation is
 * finished; a batch with unknown children waits, and settles after `uh mission recover`
 * (through the completion consumer's `afterCompletion`).
 */
import type { Worker } from 'bullmq';
import type { Logger } from '../../shared/logger.js';
import type { PriceTable } from '../../shared/prices.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';
import { BATCH_QUEUE } from '../../shared/queue/topology.js';
import { settleBatchIfDone, settleBatchOfOperation, type RetryContext } from './settle-batch.js';

export async function startBatchWorker(
  ops: OperationStore,
  prices: PriceTable,
  logger: Logger,
  retry?: RetryContext,
): Promise<Worker> {
  const { Worker: BullWorker } = await import('bullmq');
  const connection = ops.redis.duplicate();
  const worker = new BullWorker(
    BATCH_QUEUE,
    async (job) => {
      const batchId = String((job.data as { batch_id?: unknown }).batch_id);
      const outcome = await settleBatchIfDone(ops, batchId, prices, retry);
      logger.info({ batch_id: batchId, outcome }, 'batch flow parent processed');
      return { batch_id: batchId, outcome };
    },
    { connection, prefix: ops.keys.bullPrefix, concurrency: 4 },
  );
  worker.on('error', (error) => logger.warn({ error: String(error) }, 'batch worker error'));
  worker.on('closed', () => connection.disconnect());
  return worker;
}

/** For the completion consumer: settle the batch of a completed child, when it is the last. */
export function settleBatchAfter(ops: OperationStore, prices: PriceTable, logger: Logger, retry?: RetryContext) {
  return async (completion: { operation_id: string }): Promise<void> => {
    const outcome = await settleBatchOfOperation(ops, completion.operation_id, prices, retry);
    if (outcome) logger.info({ operation_id: completion.operation_id, outcome }, 'batch child completed');
  };
}
