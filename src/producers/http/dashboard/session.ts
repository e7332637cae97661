/** The dashboard session cookie (no imports of ours above the token types: guards.ts and routes.ts both read it). */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TokenEntry } from '../api-tokens.js';

export const SESSION_COOKIE = 'uh_session';
export const SESSION_SECONDS = 12 * 3600;
/** Paths served without a token: the shell holds no data. */
export const DASHBOARD_PUBLIC = new Set(['/', '/dashboard/app.js', '/dashboard/app.css', '/v1/session']);

const mac = (key: Buffer, entry: TokenEntry) =>
  createHmac('sha256', key)
    .update(`uh-dashboard-session-v2\n${entry.id}\n${entry.sha256.toString('hex')}`)
    .digest('hex');

/** `<token id>.<HMAC of the id and the token's hash under the server's session key>`: never the token. */
export function sessionValue(key: Buffer, entry: TokenEntry): string {
  return `${entry.id}.${mac(key, entry)}`;
}

/** The token entry a session cookie stands for, or null (unknown id, wrong MAC, a token since removed). */
export function sessionEntry(key: Buffer, entries: readonly TokenEntry[], value: string): TokenEntry | null {
  const dot = value.lastIndexOf('.');
  if (dot <= 0) return null;
  const entry = entries.find((e) => e.id === value.slice(0, dot));
  if (!entry) return null;
  const given = Buffer.from(value.slice(dot + 1));
  const want = Buffer.from(mac(key, entry));
  return given.length === want.length && timingSafeEqual(given, want) ? entry : null;
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
