/**
 * `POST /v1/batches`: a batch over HTTP, as `uh batch submit` makes it (docs/batch.md): one
 * mission × runtimes × trials, or a suite whose tasks are missions given inline (a Harbor task
 * directory or a hidden verifier names a path on the producer's host: the CLI's, refused here
 * unless local paths are allowed). 201 created, 200 attached to the same batch, 409 another batch
 * under the id; every child is validated before anything is written.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { batchRuntimes, MAX_TRIALS, planMissionBatch, type BatchPlan } from '../../../shared/batch/record.js';
import { planSuiteBatch, type Suite } from '../../../shared/batch/suite-plan.js';
import { IdSchema } from '../../../shared/contracts/ids.js';
import { parseMission } from '../../../shared/contracts/load-mission.js';
import { submitBatch } from '../../queue/submit-batch.js';
import { tenantOfRequest, type RouteContext } from '../context.js';

const Trials = z.number().int().min(1).max(MAX_TRIALS);
const Runtimes = z.array(IdSchema).min(1).max(32);

export const BatchBody = z.union([
  z.strictObject({
    mission: z.record(z.string(), z.unknown()).describe('a uh.mission.v0; the batch id is its operation_id'),
    runtimes: Runtimes.optional().describe('default: the mission’s runtime list'),
    trials: Trials.default(1),
  }),
  z.strictObject({
    suite: z.strictObject({
      suite_id: IdSchema,
      title: z.string().min(1).max(200).optional(),
      runtimes: Runtimes,
      trials: Trials.default(1),
      runtime_config_overrides: z.record(IdSchema, z.record(z.string(), z.unknown())).default({}),
      tasks: z
        .array(z.strictObject({ task_id: IdSchema, mission: z.record(z.string(), z.unknown()) }))
        .min(1)
        .max(200),
    }),
    id: IdSchema.optional().describe('the batch id (default <suite_id>-<8 hex> of the tasks, runtimes and trials)'),
  }),
]);
type Body = z.infer<typeof BatchBody>;

function planOf(body: Body, ctx: RouteContext): BatchPlan {
  const parse = (value: unknown, source: string) => parseMission(value, ctx.baseDir, source, ctx.repositoryPolicy);
  if ('mission' in body) {
    const mission = parse(body.mission, 'mission');
    return planMissionBatch(mission, batchRuntimes(mission, body.runtimes?.join(',')), body.trials, 'queue');
  }
  const s = body.suite;
  const suite: Suite = {
    suite_id: s.suite_id,
    title: s.title ?? `Suite ${s.suite_id}`,
    runtimes: s.runtimes,
    trials: s.trials,
    runtime_config_overrides: s.runtime_config_overrides,
    tasks: s.tasks.map((t, i) => ({
      task_id: t.task_id,
      format: 'mission' as const,
      mission: parse(t.mission, `suite.tasks.${i}.mission`),
    })),
  };
  return planSuiteBatch(suite, s.runtimes, s.trials, 'queue', body.id);
}

export function batchSubmitRoute(app: FastifyInstance, ctx: RouteContext): void {
  app.post(
    '/v1/batches',
    {
      config: { scope: 'submit' },
      schema: {
        summary:
          'Submit a batch (a mission × runtimes × trials, or a suite of inline missions): 201 created, 200 attached to the same batch, 409 another batch under the id',
        tags: ['batches'],
        body: BatchBody,
      },
    },
    async (req, reply) => {
      const plan = planOf(req.body as Body, ctx);
      const host = ctx.hostSettings ? { host: ctx.hostSettings } : {};
      const submitted = await submitBatch(ctx.client, plan, {
        stateDir: ctx.stateDir,
        cacheDir: ctx.cacheDir,
        tenant: tenantOfRequest(req),
        ...host,
      });
      const id = submitted.record.batch_id;
      return reply.code(submitted.kind === 'created' ? 201 : 200).send({
        kind: submitted.kind,
        batch_id: id,
        enqueued: submitted.enqueued,
        tasks: submitted.record.tasks,
        runtimes: submitted.record.runtimes,
        trials: submitted.record.trials,
        operations: submitted.record.operations,
        links: { self: `/v1/batches/${id}`, report: `/v1/batches/${id}/report.html` },
      });
    },
  );
}
