/**
 * Request guards run before any route (onRequest): Host (DNS rebinding), Origin (CORS closed
 * unless allowlisted), bearer token (constant-time, always required: api-config.ts). /healthz needs no token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiConfig } from './api-config.js';
import { sendError } from './http-errors.js';
import { DASHBOARD_PUBLIC, sessionFrom, sessionValue } from './dashboard/session.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Compare digests so neither content nor length leaks through timing. */
export function tokenMatches(given: string, token: string): boolean {
  return timingSafeEqual(digest(given), digest(token));
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

function checkToken(config: ApiConfig, req: FastifyRequest, reply: FastifyReply): boolean {
  if (PUBLIC.has(req.url.split('?')[0] ?? '')) return true;
  const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (given !== undefined && tokenMatches(given, config.token)) return true;
  // The dashboard's session cookie; a state change also needs a header a cross-site form cannot send.
  const session = sessionFrom(req.headers.cookie);
  if (given === undefined && session !== null && tokenMatches(session, sessionValue(config.token))) {
    if (SAFE_METHODS.has(req.method) || req.headers['x-uh-dashboard'] === '1') return true;
  }
  reply.header('www-authenticate', 'Bearer');
  sendError(reply, 401, 'unauthorized', 'missing or wrong bearer token');
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
