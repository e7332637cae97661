import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../context.js';
import { listWorkers, queueCounts, runtimeIds } from '../fleet.js';

export function fleetRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get(
    '/v1/workers',
    {
      config: { scope: 'read' },
      schema: {
        summary:
          'Live workers (heartbeat within its TTL): host, runtimes, concurrency, running operations, last heartbeat',
        tags: ['fleet'],
      },
    },
    async (req) => {
      const workers = await listWorkers(ctx.client);
      if (req.auth?.scopes.has('admin')) return { workers };
      // A tenant's token sees which of ITS operations run where, never another tenant's ids.
      const ids = [...new Set(workers.flatMap((w) => w.running_operations))];
      const records = await ctx.client.store.getMany(ids);
      const own = new Set(ids.filter((_, i) => records[i]?.tenant === req.auth?.tenant));
      return {
        workers: workers.map((w) => ({ ...w, running_operations: w.running_operations.filter((id) => own.has(id)) })),
      };
    },
  );

  app.get(
    '/v1/queues',
    {
      config: { scope: 'read' },
      schema: { summary: 'BullMQ job counts per runtime queue, with the live workers serving it', tags: ['fleet'] },
    },
    async () => {
      const workers = await listWorkers(ctx.client);
      const queues = [];
      for (const runtime of await runtimeIds(ctx.client, workers)) {
        queues.push({
          runtime,
          jobs: await queueCounts(ctx.client, runtime),
          live_workers: workers.filter((w) => w.runtimes.includes(runtime)).length,
        });
      }
      return { queues };
    },
  );

  app.get(
    '/metrics',
    {
      config: { scope: 'admin' },
      schema: { summary: 'Prometheus text format (docs/observability.md)', tags: ['fleet'] },
    },
    async (_req, reply) => {
      ctx.metrics.sseClients.set(ctx.hub.openClients);
      const text = await ctx.metrics.render();
      return reply.type(ctx.metrics.registry.contentType).send(text);
    },
  );
}
