import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { branchNameProblem } from '../../../shared/contracts/promotion.js';
import { promoteFromStore } from '../../../workers/promotion/promote-from.js';
import { operationOr404, type RouteContext } from '../context.js';
import { OperationParams } from './operations.js';

const PromoteBody = z.strictObject({
  branch: z
    .string()
    .max(255)
    .refine((b) => branchNameProblem(b) === null, { message: 'not a valid branch name' })
    .optional()
    .describe('default uh/<operation_id>'),
  push: z.boolean().default(false),
  /** A remote NAME only: an API caller must not choose where the server pushes with its credentials. */
  remote: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'a remote name of the repository, not a URL or path')
    .optional(),
  allow_unverified: z.boolean().default(false),
});

/** `POST /v1/operations/:id/promote`: the operation's captured diff as a branch (docs/promotion.md). */
export function promoteRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.post(
    '/v1/operations/:id/promote',
    {
      config: { scope: 'promote' },
      schema: {
        summary:
          'Promote a verified operation to a branch (201 created, 200 already promoted; 400 refused by policy; 409 another target; 503 push rejected)',
        tags: ['operations'],
        params: OperationParams,
        body: PromoteBody,
      },
    },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      await operationOr404(ctx, id, req);
      const body = req.body as z.infer<typeof PromoteBody>;
      const { record, created } = await promoteFromStore(ctx.client.store, {
        operationId: id,
        branch: body.branch,
        push: body.push ? { remote: body.remote } : null,
        allowUnverified: body.allow_unverified,
        identity: ctx.promotionIdentity,
        via: 'api',
        cacheDir: ctx.cacheDir,
        receiptKey: ctx.receiptKey,
      });
      return reply.code(created ? 201 : 200).send({ created, promotion: record });
    },
  );
}
