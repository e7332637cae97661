/**
 * The API's access log: one NDJSON line per request, through pino on stderr (stdout carries only
 * the "listening on" line), written when the response ends: an event stream is logged when it
 * closes, a request refused by a guard (401, 403, 421) too. Fields: `time`, `request_id` (also
 * sent back as `x-request-id`), `tenant` and `token_id` (null before a token was accepted; never
 * the token), `method`, `route` (the route pattern, e.g. `/v1/operations/:id`), `path` (no query
 * string: `/?token=` must not reach a log), `status`, `duration_ms`.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../../shared/logger.js';

export function registerAccessLog(app: FastifyInstance, log: Logger): void {
  app.addHook('onRequest', async (req, reply) => {
    const started = process.hrtime.bigint();
    reply.header('x-request-id', req.id);
    reply.raw.once('close', () => {
      log.info(
        {
          request_id: req.id,
          tenant: req.auth?.tenant ?? null,
          token_id: req.auth?.id ?? null,
          method: req.method,
          route: req.routeOptions.url ?? null,
          path: req.url.split('?')[0],
          status: reply.raw.statusCode,
          duration_ms: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        },
        'request',
      );
    });
  });
}

/** Request ids: random, so lines of several API instances never collide. */
export const newRequestId = (): string => randomUUID();
