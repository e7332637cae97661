import type { FastifyInstance } from 'fastify';
import type { RouteContext } from '../context.js';
import { listWorkers, queueCounts, runtimeIds } from '../fleet.js';

export function fleetRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get(
    '/v1/workers',
    {
      schema: {
        summary:
          'Live workers (heartbeat within its TTL): host, runtimes, concurrency, running operations, last heartbeat',
        tags: ['fleet'],
      },
    },
    async () => ({
      workers: await listWorkers(ctx.client),
    }),
  );

  app.get(
    '/v1/queues',
    { schema: { summary: 'BullMQ job counts per runtime queue, with the live workers serving it', tags: ['fleet'] } },
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
    { schema: { summary: 'Prometheus text format (docs/observability.md)', tags: ['fleet'] } },
    async (_req, reply) => {
      ctx.metrics.sseClients.set(ctx.hub.openClients);
      const text = await ctx.metrics.render();
      return reply.type(ctx.metrics.registry.contentType).send(text);
    },
  );
}
