import type { FastifyInstance, FastifyRequest } from 'fastify';
import { UhError } from '../../../shared/errors.js';
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

/** The tenant of each batch (its first operation's), for the tenant checks below; null when unknown. */
async function batchTenants(ctx: RouteContext, ids: readonly string[]): Promise<Array<string | null>> {
  const batches = new BatchStore(ctx.client.redis, ctx.client.store.keys);
  const firsts = await Promise.all(ids.map(async (id) => (await batches.get(id))?.record.operations[0]?.operation_id));
  const records = await ctx.client.store.getMany(firsts.map((id) => id ?? ''));
  return records.map((r, i) => (firsts[i] === undefined ? null : (r?.tenant ?? null)));
}

/** Another tenant's batch is not found, as its operations are (admin sees every batch). */
async function batchOr404(ctx: RouteContext, req: FastifyRequest, id: string): Promise<void> {
  if (req.auth?.scopes.has('admin')) return;
  const [tenant] = await batchTenants(ctx, [id]);
  if (tenant !== req.auth?.tenant)
    throw new UhError('not_found', `no batch ${id}`, { hint: 'check the id; GET /v1/batches lists them' });
}

/** Queued batches (`uh batch submit`): the record, its children and the report (docs/batch.md). */
export function batchRoutes(app: FastifyInstance, ctx: RouteContext): void {
  batchSubmitRoute(app, ctx);
  app.get(
    '/v1/batches',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Queued batches, newest first, with their state (the dashboard’s batches page)',
        tags: ['batches'],
        querystring: z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(50) }),
      },
    },
    async (req) => {
      const { limit } = req.query as { limit: number };
      const batches = await new BatchStore(ctx.client.redis, ctx.client.store.keys).list(limit);
      if (req.auth?.scopes.has('admin')) return { batches };
      const tenants = await batchTenants(
        ctx,
        batches.map((b) => b.batch_id),
      );
      return { batches: batches.filter((_, i) => tenants[i] === req.auth?.tenant) };
    },
  );
  app.get(
    '/v1/batches/:id',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'A queued batch: record, state, children and the report so far (404 for an unknown id)',
        tags: ['batches'],
        params: BatchParams,
        querystring: ReportQuery,
      },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      await batchOr404(ctx, req, id);
      return batchView(ctx.client, id, ctx.prices, (req.query as { k?: string }).k);
    },
  );

  app.get(
    '/v1/batches/:id/report.html',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'The batch report as one self-contained HTML page (no network)',
        tags: ['batches'],
        params: BatchParams,
        querystring: ReportQuery,
      },
    },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      await batchOr404(ctx, req, id);
      const html = await batchReportHtml(ctx.client, id, ctx.prices, (req.query as { k?: string }).k);
      // The report carries its own CSP; nothing it shows came from us unescaped.
      return reply.type('text/html; charset=utf-8').send(html);
    },
  );
}
