import type { FastifyInstance } from 'fastify';
import { z } from 'zod';

export function healthRoutes(app: FastifyInstance): void {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Liveness: answers without a token and without Redis',
        tags: ['health'],
        response: { 200: z.object({ ok: z.literal(true) }) },
      },
    },
    async () => ({ ok: true as const }),
  );
}
