/**
 * The HTTP API: queue mode over HTTP, for producers that are not a shell (CI services, bots).
 *
 *   GET  /healthz                              → {ok}
 *   POST /v1/missions[?runtime=id]             uh.mission.v0 JSON → 201 created | 200 attached;
 *                                              400 invalid (one line per problem), 409 conflict
 *   GET  /v1/operations/:id                    → {operation, receipt|null}
 *   GET  /v1/operations/:id/receipt|diff|final-message
 *   GET  /v1/operations/:id/events             text/event-stream, from the start, until settled
 *   POST /v1/operations/:id/cancel             → {outcome}
 *
 * With `UH_API_TOKEN` set every route but /healthz needs `Authorization: Bearer <token>`; the
 * server refuses to listen beyond loopback without one. Bodies are capped at 1 MiB.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { loadConfig } from '../../shared/config.js';
import { parseMissionBody, repositoryPolicy, type RepositoryPolicy } from '../../shared/contracts/load-mission.js';
import { ID_PATTERN } from '../../shared/contracts/ids.js';
import { errorMessage, invalidInput, UhError } from '../../shared/errors.js';
import { publicRecord } from '../../shared/queue/operation-store.js';
import type { QueueClient } from '../queue/queue-client.js';
import { submitOperation } from '../submit.js';

export interface ApiOptions {
  client: QueueClient;
  stateDir: string;
  cacheDir: string;
  /** Bearer token required on every route but /healthz; undefined: none. */
  token: string | undefined;
  /** Base dir for relative local repository paths in submitted missions. */
  baseDir: string;
  /** Which repository locations are accepted; default from UH_ALLOW_LOCAL_REPOS / UH_ALLOW_HTTP_REPOS. */
  repositoryPolicy?: RepositoryPolicy;
}

const MAX_BODY = 1024 * 1024;

const STATUS_OF: Record<string, number> = {
  invalid_input: 400,
  unsupported_capability: 400,
  not_found: 404,
  conflict: 409,
  runtime_unavailable: 503,
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly kind = 'http',
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, error: unknown): void {
  if (error instanceof HttpError) return send(res, error.status, { error: { kind: error.kind, message: error.message } });
  if (UhError.isInstance(error)) {
    return send(res, STATUS_OF[error.kind] ?? 500, {
      error: { kind: error.kind, name: error.name, message: error.message, details: error.details, hint: error.hint ?? null },
    });
  }
  send(res, 500, { error: { kind: 'internal', message: errorMessage(error) } });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, `body over ${MAX_BODY} bytes`, 'too_large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function authorized(req: IncomingMessage, token: string | undefined): boolean {
  if (token === undefined) return true;
  const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

const ARTIFACT: Record<string, { name: string; type: string }> = {
  receipt: { name: 'receipt', type: 'application/json; charset=utf-8' },
  diff: { name: 'diff', type: 'text/x-diff; charset=utf-8' },
  'final-message': { name: 'final_message', type: 'text/plain; charset=utf-8' },
};

export function createApiServer(options: ApiOptions): Server {
  const { client } = options;
  const policy = options.repositoryPolicy ?? repositoryPolicy(loadConfig(), 'http');
  const operation = async (id: string) => {
    if (!ID_PATTERN.test(id)) throw invalidInput(`operation id "${id}" is not a valid id`);
    const record = await client.store.get(id);
    if (!record) throw new UhError('not_found', `no operation ${id}`, { hint: 'check the id; GET /v1/operations/<id>' });
    return record;
  };

  const routes = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    const parts = url.pathname.split('/').filter(Boolean);
    if (req.method === 'POST' && url.pathname === '/v1/missions') {
      const mission = parseMissionBody(await readBody(req), options.baseDir, policy);
      const runtime = url.searchParams.get('runtime') ?? undefined;
      const result = await submitOperation(client, mission, { stateDir: options.stateDir, cacheDir: options.cacheDir, ...(runtime ? { runtime } : {}) });
      const id = result.record.operation_id;
      return send(res, result.kind === 'created' ? 201 : 200, {
        kind: result.kind,
        operation: publicRecord(result.record),
        links: { self: `/v1/operations/${id}`, events: `/v1/operations/${id}/events`, receipt: `/v1/operations/${id}/receipt` },
      });
    }
    if (parts[0] === 'v1' && parts[1] === 'operations' && parts[2] !== undefined) {
      const id = decodeURIComponent(parts[2]);
      const sub = parts[3];
      if (req.method === 'GET' && sub === undefined) {
        const record = await operation(id);
        const receipt = (await client.store.artifacts(id)).receipt;
        return send(res, 200, { operation: publicRecord(record), receipt: receipt ? JSON.parse(receipt) : null });
      }
      if (req.method === 'GET' && sub !== undefined && ARTIFACT[sub]) {
        await operation(id);
        const { name, type } = ARTIFACT[sub];
        const body = (await client.store.artifacts(id))[name];
        if (body === undefined) throw new HttpError(404, `operation ${id} has no ${sub} yet`, 'not_found');
        res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
        return void res.end(body);
      }
      if (req.method === 'GET' && sub === 'events') {
        await operation(id);
        return streamEvents(res, req, id);
      }
      if (req.method === 'POST' && sub === 'cancel') {
        const record = await operation(id);
        const { cancelOperation } = await import('../queue/cancel-operation.js');
        const outcome = await cancelOperation(client, record, 'cancelled through the HTTP API');
        return send(res, 202, { operation_id: id, outcome });
      }
    }
    throw new HttpError(404, `no route ${req.method} ${url.pathname}`, 'not_found');
  };

  const streamEvents = async (res: ServerResponse, req: IncomingMessage, id: string): Promise<void> => {
    const { tailOperation } = await import('../../shared/queue/event-stream.js');
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const controller = new AbortController();
    req.on('close', () => controller.abort());
    const settled = await tailOperation(client.store, id, {
      from: 'start',
      signal: controller.signal,
      onEvent: (event) => res.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`),
    });
    if (settled) res.write(`event: end\ndata: ${JSON.stringify({ state: settled.state, status: settled.status ?? null, verdict: settled.verdict ?? null, exit_code: settled.exit_code ?? null })}\n\n`);
    res.end();
  };

  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://api.invalid');
    if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, { ok: true });
    if (!authorized(req, options.token)) {
      res.setHeader('www-authenticate', 'Bearer');
      return send(res, 401, { error: { kind: 'unauthorized', message: 'missing or wrong bearer token' } });
    }
    routes(req, res, url).catch((error) => {
      if (res.headersSent) res.end();
      else sendError(res, error);
    });
  });
}
