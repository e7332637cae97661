import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { OperationStateSchema, VerdictSchema } from '../../../shared/contracts/status.js';
import { UhError } from '../../../shared/errors.js';
import { publicRecord, type QueueRecord } from '../../../shared/queue/operation-store.js';
import { cancelOperation } from '../../queue/cancel-operation.js';
import { operationOr404, tenantOfRequest, type RouteContext } from '../context.js';
import { listOperations } from '../fleet.js';
import { receiptTrustOfText } from '../../../operation/receipt-trust.js';

export const OperationParams = z.strictObject({ id: z.string().min(1).max(128).describe('operation_id') });

const ListQuery = z.strictObject({
  state: OperationStateSchema.optional(),
  runtime: z.string().max(64).optional(),
  verdict: VerdictSchema.optional(),
  label: z.string().max(256).optional().describe('`key` or `key=value` of the mission labels'),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().max(300).optional().describe('next_cursor of the previous page'),
});

const ARTIFACT: Record<string, { name: string; type: string }> = {
  receipt: { name: 'receipt', type: 'application/json; charset=utf-8' },
  diff: { name: 'diff', type: 'text/x-diff; charset=utf-8' },
  'final-message': { name: 'final_message', type: 'text/plain; charset=utf-8' },
  // The settled operation's event transcript (NDJSON), from the artifact store once Redis trimmed its stream.
  transcript: { name: 'events', type: 'application/x-ndjson; charset=utf-8' },
};

/** A stored receipt as JSON; text that is not JSON as it is (its signature state says `invalid`). */
function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The public record plus the mission's title (the dashboard lists it; rendered as text). */
function listed(record: QueueRecord) {
  const title = (record.job.mission as { title?: unknown } | null)?.title;
  return { ...publicRecord(record), title: typeof title === 'string' ? title : null };
}

/** GET /v1/operations/:id/<artifact>: the receipt (with its signature state in headers), diff, logs. */
function artifactRoutes(app: FastifyInstance, ctx: RouteContext): void {
  for (const [sub, { name, type }] of Object.entries(ARTIFACT)) {
    app.get(
      `/v1/operations/:id/${sub}`,
      {
        config: { scope: 'read' },
        schema: {
          summary: `The operation's ${sub} (404 until there is one)`,
          tags: ['operations'],
          params: OperationParams,
        },
      },
      async (req, reply) => {
        const { id } = req.params as { id: string };
        await operationOr404(ctx, id, req);
        const body = (await ctx.client.store.artifact(id, name)) ?? undefined;
        if (body === undefined)
          throw new UhError('not_found', `operation ${id} has no ${sub} yet`, {
            hint: 'wait until it settles: GET /v1/operations/<id>/events',
          });
        if (name === 'receipt') {
          const trust = receiptTrustOfText(body, ctx.keyring);
          reply.header('x-uh-signature-state', trust.state).header('x-uh-signature-key-id', trust.key_id ?? '');
        }
        return reply.type(type).send(body);
      },
    );
  }
}

export function operationRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get(
    '/v1/operations',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Operations newest first, filtered, one page per call (cursor paging)',
        tags: ['operations'],
        querystring: ListQuery,
      },
    },
    async (req) => {
      const query = req.query as z.infer<typeof ListQuery>;
      // A tenant's token lists its tenant's operations only; admin lists every tenant's.
      const tenant = req.auth?.scopes.has('admin') ? undefined : tenantOfRequest(req);
      const page = await listOperations(ctx.client, { ...query, ...(tenant ? { tenant } : {}) });
      return { operations: page.operations.map(listed), next_cursor: page.next_cursor };
    },
  );

  app.get(
    '/v1/operations/:id',
    {
      config: { scope: 'read' },
      schema: {
        summary:
          'An operation record, its receipt (null until settled) and signature: {state: valid|unsigned|invalid|unknown_key, key_id, reason}',
        tags: ['operations'],
        params: OperationParams,
      },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      const record = await operationOr404(ctx, id, req);
      const receipt = await ctx.client.store.artifact(id, 'receipt');
      if (!receipt) return { operation: listed(record), receipt: null, signature: null };
      // The receipt as stored, and whether its signature verifies: only `valid` may be shown as the outcome.
      const signature = receiptTrustOfText(receipt, ctx.keyring);
      return { operation: listed(record), receipt: parsedOrText(receipt), signature };
    },
  );

  artifactRoutes(app, ctx);

  app.post(
    '/v1/operations/:id/cancel',
    {
      config: { scope: 'cancel' },
      schema: {
        summary: 'Cancel: 202 with what happened (cancelled while waiting, cancel sent, already finished)',
        tags: ['operations'],
        params: OperationParams,
      },
    },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const record = await operationOr404(ctx, id, req);
      const outcome = await cancelOperation(ctx.client, record, 'cancelled through the HTTP API', ctx.receiptKey);
      return reply.code(202).send({ operation_id: id, outcome });
    },
  );
}
