import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { parseMission } from '../../../shared/contracts/load-mission.js';
import { MissionSchema } from '../../../shared/contracts/mission.js';
import { publicRecord } from '../../../shared/queue/operation-store.js';
import { submitOperation } from '../../submit.js';
import { tenantOfRequest, type RouteContext } from '../context.js';

export function missionRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.post(
    '/v1/missions',
    {
      config: { scope: 'submit' },
      schema: {
        summary:
          'Submit a uh.mission.v0 (application/json): 201 created, 200 attached to the same contract, 409 another contract under that operation_id',
        tags: ['operations'],
        querystring: z.strictObject({
          runtime: z
            .string()
            .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/)
            .optional(),
        }),
        body: MissionSchema,
      },
    },
    async (req, reply) => {
      const mission = parseMission(req.body, ctx.baseDir, 'mission', ctx.repositoryPolicy);
      const { runtime } = req.query as { runtime?: string };
      const host = ctx.hostSettings ? { host: ctx.hostSettings } : {};
      const options = {
        stateDir: ctx.stateDir,
        cacheDir: ctx.cacheDir,
        tenant: tenantOfRequest(req),
        ...host,
        ...(runtime ? { runtime } : {}),
      };
      const result = await submitOperation(ctx.client, mission, options);
      const id = result.record.operation_id;
      return reply.code(result.kind === 'created' ? 201 : 200).send({
        kind: result.kind,
        operation: publicRecord(result.record),
        links: {
          self: `/v1/operations/${id}`,
          events: `/v1/operations/${id}/events`,
          receipt: `/v1/operations/${id}/receipt`,
        },
      });
    },
  );
}
