import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { BatchStore } from '../../../shared/queue/batch-store.js';
import { batchReportHtml, batchView } from '../../queue/batch-view.js';
import { batchSubmitRoute } from './batch-submit.js';
import type { RouteContext } from '../context.js';

const BatchParams = z.strictObject({ id: z.string().min(1).max(128).describe('batch_id') });
const ReportQuery = z.strictObject({
  k: z
    .string()
    .regex(/^\d{1,2}$/)
    .optional()
    .describe('the k of pass@k (1 ≤ k ≤ trials; default the trial count)'),
});

/** Queued batches (`uh batch submit`): the record, its children and the report (docs/batch.md). */
export function batchRoutes(app: FastifyInstance, ctx: RouteContext): void {
  batchSubmitRoute(app, ctx);
  app.get(
    '/v1/batches',
    {
      schema: {
        summary: 'Queued batches, newest first, with their state (the dashboard’s batches page)',
        tags: ['batches'],
        querystring: z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(50) }),
      },
    },
    async (req) => {
      const { limit } = req.query as { limit: number };
      return { batches: await new BatchStore(ctx.client.redis, ctx.client.store.keys).list(limit) };
    },
  );
  app.get(
    '/v1/batches/:id',
    {
      schema: {
        summary: 'A queued batch: record, state, children and the report so far (404 for an unknown id)',
        tags: ['batches'],
        params: BatchParams,
        querystring: ReportQuery,
      },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      return batchView(ctx.client, id, ctx.prices, (req.query as { k?: string }).k);
    },
  );

  app.get(
    '/v1/batches/:id/report.html',
    {
      schema: {
        summary: 'The batch report as one self-contained HTML page (no network)',
        tags: ['batches'],
        params: BatchParams,
        querystring: ReportQuery,
      },
    },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const html = await batchReportHtml(ctx.client, id, ctx.prices, (req.query as { k?: string }).k);
      // The report carries its own CSP; nothing it shows came from us unescaped.
      return reply.type('text/html; charset=utf-8').send(html);
    },
  );
}
