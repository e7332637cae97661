/**
 * Request guards run before any route (onRequest): Host (DNS rebinding), Origin (CORS closed
 * unless allowlisted), bearer token (constant-time, always required: api-config.ts) and the
 * scope the route declares (`config: {scope}`; a route that declares none needs `admin`, e.g.
 * bull-board's). /healthz and the dashboard shell need no token. The token's entry (id, tenant,
 * scopes) is `req.auth` for the routes and the access log.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiConfig } from './api-config.js';
import { hasScope, tokenEntry, type Scope, type TokenEntry } from './api-tokens.js';
import { sendError } from './http-errors.js';
import { DASHBOARD_PUBLIC, sessionEntry, sessionFrom } from './dashboard/session.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a token needs for this route (read, submit, cancel, promote, admin). */
    scope?: Scope;
  }
  interface FastifyRequest {
    /** The caller's token entry, once the guard accepted it; undefined on public routes. */
    auth?: TokenEntry;
  }
}

/** `example.com:8787` → `example.com`, `[::1]:80` → `[::1]`. */
export function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.replace(/:\d+$/, '');
}

const PUBLIC = new Set(['/healthz', ...DASHBOARD_PUBLIC]);
const SAFE_METHODS = new Set(['GET', 'HEAD']);

function checkHost(config: ApiConfig, req: FastifyRequest, reply: FastifyReply): boolean {
  if (config.allowedHosts === null) return true;
  const host = hostName(req.headers.host ?? '');
  if (config.allowedHosts.has(host)) return true;
  sendError(
    reply,
    421,
    'bad_host',
    `Host "${host}" is not served here`,
    'set UH_API_ALLOWED_HOSTS to the names clients use',
  );
  return false;
}

function checkOrigin(config: ApiConfig, req: FastifyRequest, reply: FastifyReply): boolean {
  const origin = req.headers.origin;
  // The dashboard's own requests (same origin as the Host it was served from) need no CORS.
  if (origin === undefined || origin === `${req.protocol}://${req.headers.host ?? ''}`) return true;
  if (!config.allowedOrigins.has(origin)) {
    sendError(
      reply,
      403,
      'bad_origin',
      `Origin "${origin}" is not allowed`,
      'set UH_API_ALLOWED_ORIGINS to allow a browser origin',
    );
    return false;
  }
  reply.header('access-control-allow-origin', origin).header('vary', 'Origin');
  if (req.method === 'OPTIONS') {
    reply
      .code(204)
      .header('access-control-allow-methods', 'GET, POST')
      .header('access-control-allow-headers', 'authorization, content-type, last-event-id')
      .header('access-control-max-age', '600')
      .send();
    return false;
  }
  return true;
}

function authenticate(config: ApiConfig, req: FastifyRequest): TokenEntry | null {
  const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (given !== undefined) return tokenEntry(config.tokens, given);
  // The dashboard's session cookie; a state change also needs a header a cross-site form cannot send.
  const session = sessionFrom(req.headers.cookie);
  const entry = session === null ? null : sessionEntry(config.sessionKey, config.tokens, session);
  if (entry && (SAFE_METHODS.has(req.method) || req.headers['x-uh-dashboard'] === '1')) return entry;
  return null;
}

function checkToken(config: ApiConfig, req: FastifyRequest, reply: FastifyReply): boolean {
  if (PUBLIC.has(req.url.split('?')[0] ?? '')) return true;
  const entry = authenticate(config, req);
  if (entry === null) {
    reply.header('www-authenticate', 'Bearer');
    sendError(reply, 401, 'unauthorized', 'missing or wrong bearer token');
    return false;
  }
  req.auth = entry;
  // A matched route declares its scope (none declared: admin); an unknown route answers 404 to any token.
  const scope: Scope | undefined =
    req.routeOptions.url === undefined ? undefined : (req.routeOptions.config.scope ?? 'admin');
  if (scope === undefined || hasScope(entry, scope)) return true;
  sendError(
    reply,
    403,
    'forbidden',
    `token "${entry.id}" lacks the ${scope} scope`,
    `ask for a token with the ${scope} scope (UH_API_TOKENS_FILE)`,
  );
  return false;
}

export function registerGuards(app: FastifyInstance, config: ApiConfig): void {
  app.addHook('onRequest', async (req, reply) => {
    if (!checkHost(config, req, reply)) return reply;
    if (!checkOrigin(config, req, reply)) return reply;
    if (!checkToken(config, req, reply)) return reply;
    return undefined;
  });
}
