/**
 * The HTTP API's settings, read from the environment in ONE place (`readApiConfig`), so the
 * config module can take these reads over without touching the server.
 *
 *   UH_API_TOKEN              bearer token; >= 16 chars always, >= 32 beyond loopback
 *   UH_API_ALLOWED_HOSTS      comma list of Host names accepted (default: loopback names when bound to loopback, any otherwise)
 *   UH_API_ALLOWED_ORIGINS    comma list of browser Origins accepted, with CORS for them (default: none)
 *   UH_API_SSE_MAX_CLIENTS    open event streams at most (default 1000; beyond: 503)
 *   UH_API_SSE_KEEPALIVE_MS   keep-alive comment interval on event streams (default 15000)
 */
import { invalidInput } from '../../shared/errors.js';

export interface ApiConfig {
  token: string | undefined;
  /** Lower-case host names without port; null: any. */
  allowedHosts: ReadonlySet<string> | null;
  allowedOrigins: ReadonlySet<string>;
  sseMaxClients: number;
  keepAliveMs: number;
  bodyLimit: number;
}

export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', '::1', 'localhost', '[::1]']);
const MIN_TOKEN = 16;
const MIN_TOKEN_BEYOND_LOOPBACK = 32;

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw invalidInput(`${name}: "${raw}" must be a positive integer`);
  return n;
}

/** Every env read of `uh api start`; `bindHost` is the --host the server listens on. */
export function readApiConfig(env: NodeJS.ProcessEnv, bindHost: string): ApiConfig {
  const token = env.UH_API_TOKEN || undefined;
  const loopback = LOOPBACK_HOSTS.has(bindHost);
  if (!loopback && token === undefined) {
    throw invalidInput(
      `--host ${bindHost}: refusing to serve beyond loopback without a token`,
      [],
      'set UH_API_TOKEN (clients send Authorization: Bearer <token>)',
    );
  }
  if (token !== undefined) {
    const min = loopback ? MIN_TOKEN : MIN_TOKEN_BEYOND_LOOPBACK;
    if (token.length < min) {
      throw invalidInput(
        `UH_API_TOKEN: ${token.length} characters, at least ${min} needed${loopback ? '' : ' beyond loopback'}`,
        [],
        'generate one: openssl rand -hex 32',
      );
    }
  }
  const hosts = list(env.UH_API_ALLOWED_HOSTS).map((h) => h.toLowerCase());
  return {
    token,
    allowedHosts: hosts.length > 0 ? new Set(hosts) : loopback ? LOOPBACK_HOSTS : null,
    allowedOrigins: new Set(list(env.UH_API_ALLOWED_ORIGINS)),
    sseMaxClients: positiveInt(env, 'UH_API_SSE_MAX_CLIENTS', 1000),
    keepAliveMs: positiveInt(env, 'UH_API_SSE_KEEPALIVE_MS', 15_000),
    bodyLimit: 1024 * 1024,
  };
}
