/**
 * The dashboard at `/` and its session. The shell and assets are public (they hold no data);
 * every read goes through /v1 behind the same token, carried by an HttpOnly SameSite=Strict
 * cookie. The cookie is set by the login form (`POST /v1/session`) or once by `/?token=…`
 * (then redirected to `/` so the token leaves the address bar). The cookie's value is an HMAC
 * of the token, never the token itself. Docs: docs/http-api.md.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { ApiConfig } from '../api-config.js';
import { tokenEntry } from '../api-tokens.js';
import { sendError } from '../http-errors.js';
import { dashboardScript } from './app-script.js';
import { DASHBOARD_CSS, DASHBOARD_HTML } from './page.js';
import { SESSION_SECONDS, sessionValue, setSession } from './session.js';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const hide = { hide: true } as const;
const SessionBody = z.strictObject({ token: z.string().min(1).max(1024) });
const ShellQuery = z.object({ token: z.string().max(1024).optional() });

export function dashboardRoutes(app: FastifyInstance, config: ApiConfig): void {
  const asset = (reply: FastifyReply, type: string, body: string) =>
    reply
      .type(type)
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', CSP)
      .send(body);
  const script = dashboardScript();

  app.get(
    '/',
    {
      schema: {
        summary: 'The dashboard (HTML shell; `?token=` once sets the session cookie)',
        tags: ['dashboard'],
        querystring: ShellQuery,
      },
    },
    async (req, reply) => {
      const { token } = req.query as z.infer<typeof ShellQuery>;
      if (token !== undefined) {
        const entry = tokenEntry(config.tokens, token);
        if (entry) setSession(req, reply, sessionValue(config.sessionKey, entry), SESSION_SECONDS);
        return reply.header('referrer-policy', 'no-referrer').redirect('/', 303);
      }
      return asset(
        reply.header('referrer-policy', 'no-referrer').header('x-frame-options', 'DENY'),
        'text/html; charset=utf-8',
        DASHBOARD_HTML,
      );
    },
  );
  app.get('/dashboard/app.js', { schema: hide }, async (_req, reply) =>
    asset(reply, 'text/javascript; charset=utf-8', script),
  );
  app.get('/dashboard/app.css', { schema: hide }, async (_req, reply) =>
    asset(reply, 'text/css; charset=utf-8', DASHBOARD_CSS),
  );

  app.post(
    '/v1/session',
    {
      schema: {
        summary: 'Dashboard login: 204 with an HttpOnly SameSite=Strict session cookie when the token is right',
        tags: ['dashboard'],
        body: SessionBody,
      },
    },
    async (req, reply) => {
      const { token } = req.body as z.infer<typeof SessionBody>;
      const entry = tokenEntry(config.tokens, token);
      if (!entry) return sendError(reply, 401, 'unauthorized', 'wrong token');
      setSession(req, reply, sessionValue(config.sessionKey, entry), SESSION_SECONDS);
      return reply.code(204).send();
    },
  );
  app.delete(
    '/v1/session',
    { schema: { summary: 'Dashboard logout: clears the session cookie', tags: ['dashboard'] } },
    async (req, reply) => {
      setSession(req, reply, '', 0);
      return reply.code(204).send();
    },
  );
}
