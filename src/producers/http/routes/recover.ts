import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { recoverQueued } from '../../../workers/recover/recover-queued.js';
import { operationOr404, type RouteContext } from '../context.js';
import { OperationParams } from './operations.js';

const RecoverBody = z.strictObject({
  settle: z
    .enum(['failed', 'cancelled'])
    .default('failed')
    .describe('the status of an unknown operation its runtime cannot settle from its own records'),
});

/**
 * `POST /v1/operations/:id/recover`: `uh mission recover` from the API (behind the API token). It
 * never runs a runtime again: an unknown operation is settled from its runtime's records or as
 * `settle`, with a signed receipt; a running one whose owner died becomes unknown (or queued when
 * its runtime never started); a queued one whose job is gone is enqueued again.
 */
export function recoverRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.post(
    '/v1/operations/:id/recover',
    {
      config: { scope: 'admin' },
      schema: {
        summary:
          'Recover an operation as uh mission recover does (never re-run): 200 {steps, operation}; 404 unknown id',
        tags: ['operations'],
        params: OperationParams,
        body: RecoverBody,
      },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      const record = await operationOr404(ctx, id, req);
      const { settle } = (req.body ?? {}) as z.infer<typeof RecoverBody>;
      const settings = { stateDir: ctx.stateDir, receiptKey: ctx.receiptKey };
      const { steps, record: after } = await recoverQueued(ctx.client, record, settle ?? 'failed', settings);
      return { steps, operation: after };
    },
  );
}
