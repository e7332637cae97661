/**
 * `GET /v1/operations/:id/events`: SSE. Each event's `id:` is its Redis stream entry id; send it
 * back as `Last-Event-ID` (header, or `?last_event_id=`) to resume after it. Ends with
 * `event: end` once the operation settles; a `: keep-alive` comment goes out on an interval.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { invalidInput } from '../../../shared/errors.js';
import type { QueueRecord } from '../../../shared/queue/operation-store.js';
import { operationOr404, type RouteContext } from '../context.js';
import { compareIds, STREAM_ID, type StreamEntry } from '../event-hub.js';
import { sendError } from '../http-errors.js';
import { OperationParams } from './operations.js';

const EventsQuery = z.strictObject({
  last_event_id: z.string().regex(STREAM_ID).optional().describe('like the Last-Event-ID header'),
});

function endLine(record: QueueRecord): string {
  const { state, status, verdict, exit_code } = record;
  return `event: end\ndata: ${JSON.stringify({ state, status: status ?? null, verdict: verdict ?? null, exit_code: exit_code ?? null })}\n\n`;
}

function resumeFrom(req: FastifyRequest): string {
  const header = req.headers['last-event-id'];
  const given =
    (typeof header === 'string' ? header : undefined) ?? (req.query as { last_event_id?: string }).last_event_id;
  if (given === undefined || given === '') return '0-0';
  if (!STREAM_ID.test(given))
    throw invalidInput(`Last-Event-ID: "${given.slice(0, 40)}" is not an event id from this stream`);
  return given;
}

async function stream(ctx: RouteContext, reply: FastifyReply, before: QueueRecord, after: string): Promise<void> {
  const id = before.operation_id;
  const res = reply.raw;
  let sent = after;
  let live = false;
  let closed = false;
  const pending: StreamEntry[] = [];
  let settled: QueueRecord | null = null;
  const write = (entry: StreamEntry) => {
    if (closed || compareIds(entry.id, sent) <= 0) return;
    sent = entry.id;
    if (entry.event) res.write(`id: ${entry.id}\nevent: ${entry.event.type}\ndata: ${JSON.stringify(entry.event)}\n\n`);
  };
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), ctx.config.keepAliveMs);
  let leave = () => undefined as void;
  const finish = (record: QueueRecord | null) => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    leave();
    ctx.hub.release();
    if (record) res.write(endLine(record));
    res.end();
  };
  res.on('close', () => finish(null));
  try {
    if (before.state === 'finished' || before.state === 'unknown') {
      for (const entry of await ctx.hub.backlog(id, after)) write(entry);
      return finish(before);
    }
    if (closed) return;
    leave = ctx.hub.join(id, {
      onEntry: (entry) => (live ? write(entry) : void pending.push(entry)),
      onSettled: (record) => (live ? finish(record) : void (settled = record)),
    });
    for (const entry of await ctx.hub.backlog(id, after)) write(entry);
    live = true;
    pending.splice(0).forEach(write);
    if (settled) finish(settled);
  } catch {
    finish(null);
  }
}

export function eventRoutes(app: FastifyInstance, ctx: RouteContext): void {
  app.get(
    '/v1/operations/:id/events',
    {
      config: { scope: 'read' },
      schema: {
        summary: 'Server-sent events of the operation, from the start or after Last-Event-ID, until it settles',
        tags: ['operations'],
        params: OperationParams,
        querystring: EventsQuery,
      },
    },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const record = await operationOr404(ctx, id, req);
      const after = resumeFrom(req);
      if (!ctx.hub.reserve())
        return sendError(
          reply,
          503,
          'too_many_streams',
          `${ctx.hub.maxClients} event streams are open, the most this server serves`,
          'retry later, or raise UH_API_SSE_MAX_CLIENTS',
        );
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        ...corsHeaders(reply),
      });
      reply.raw.flushHeaders();
      await stream(ctx, reply, record, after);
    },
  );
}

function corsHeaders(reply: FastifyReply): Record<string, string> {
  const origin = reply.getHeader('access-control-allow-origin');
  return typeof origin === 'string' ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {};
}
