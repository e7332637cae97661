/** The dashboard session cookie (no imports of ours: guards.ts and routes.ts both read it). */
import { createHmac } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const SESSION_COOKIE = 'uh_session';
export const SESSION_SECONDS = 12 * 3600;
/** Paths served without a token: the shell holds no data. */
export const DASHBOARD_PUBLIC = new Set(['/', '/dashboard/app.js', '/dashboard/app.css', '/v1/session']);

export function sessionValue(token: string): string {
  return createHmac('sha256', token).update('uh-dashboard-session-v1').digest('hex');
}

/** The session cookie's value from a Cookie header, if any. */
export function sessionFrom(cookieHeader: string | undefined): string | null {
  for (const part of (cookieHeader ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return null;
}

export function setSession(req: FastifyRequest, reply: FastifyReply, value: string, maxAge: number): void {
  const secure = req.protocol === 'https' ? '; Secure' : '';
  reply.header(
    'set-cookie',
    `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure}`,
  );
}
