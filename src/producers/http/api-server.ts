/**
 * The HTTP API on Fastify: queue mode over HTTP for producers that are not a shell (CI
 * services, bots, a dashboard). Every route is in `GET /openapi.json` and docs/http-api.md.
 *
 * Guards (guards.ts): Host and Origin checked, CORS only for allowlisted origins, bearer token
 * on every route but /healthz. Bodies: application/json only (415 otherwise), 1 MiB at most.
 * Event streams share one Redis reader per operation (event-hub.ts), with a cap on clients.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import { jsonSchemaTransform, serializerCompiler } from 'fastify-type-provider-zod';
import { errorMessage } from '../../shared/errors.js';
import { parseDocumentText } from '../../shared/contracts/load-file.js';
import { zodValidatorCompiler, type ApiOptions, type RouteContext } from './context.js';
import { EventHub } from './event-hub.js';
import { registerGuards } from './guards.js';
import { newRequestId, registerAccessLog } from './access-log.js';
import { registerErrorHandling, sendError } from './http-errors.js';
import { ApiMetrics } from './metrics.js';
import { eventRoutes } from './routes/events.js';
import { promoteRoutes } from './routes/promote.js';
import { recoverRoutes } from './routes/recover.js';
import { batchRoutes } from './routes/batches.js';
import { fleetRoutes } from './routes/fleet.js';
import { healthRoutes } from './routes/health.js';
import { missionRoutes } from './routes/missions.js';
import { operationRoutes } from './routes/operations.js';
import { receiptKeyRoutes } from './routes/receipt-key.js';
import { mountBullBoard } from './dashboard/bull-board.js';
import { dashboardRoutes } from './dashboard/routes.js';
import { loadKeyring } from '../../operation/receipt-keys.js';

export type { ApiOptions } from './context.js';

/** JSON bodies, under the input limits of mission files (docs/security.md). */
export function parseJsonBody(text: string): unknown {
  // The same bounded parser as mission files: duplicate and prototype keys refused, key and depth limits.
  return parseDocumentText(text, 'json', 'body');
}

export async function buildApiServer(options: ApiOptions): Promise<FastifyInstance> {
  const { config } = options;
  const app = Fastify({
    bodyLimit: config.bodyLimit,
    logger: false,
    genReqId: newRequestId,
    return503OnClosing: true,
    frameworkErrors: (error, _req, reply) => {
      const status = (error as { statusCode?: number }).statusCode ?? 400;
      return sendError(reply, status, status === 400 ? 'bad_request' : 'internal', errorMessage(error));
    },
  });
  app.setValidatorCompiler(zodValidatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  registerErrorHandling(app);
  if (options.accessLog) registerAccessLog(app, options.accessLog);
  registerGuards(app, config);
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Ultimate Harness HTTP API', version: '1', description: 'Queue mode over HTTP: docs/http-api.md' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  const ctx: RouteContext = {
    ...options,
    keyring: loadKeyring(options.receiptKey),
    hub: new EventHub(options.client.store, config.sseMaxClients, `uh-api-sse-${process.pid}`),
    metrics: new ApiMetrics(options.client),
  };
  app.addHook('onClose', async () => ctx.hub.close());
  healthRoutes(app);
  missionRoutes(app, ctx);
  operationRoutes(app, ctx);
  receiptKeyRoutes(app, ctx);
  eventRoutes(app, ctx);
  fleetRoutes(app, ctx);
  batchRoutes(app, ctx);
  promoteRoutes(app, ctx);
  recoverRoutes(app, ctx);
  dashboardRoutes(app, config);
  await mountBullBoard(app, options.client);
  app.get(
    '/openapi.json',
    { config: { scope: 'read' }, schema: { summary: 'This OpenAPI 3.0 document', tags: ['health'] } },
    async () => app.swagger(),
  );
  return app;
}
