/**
 * The HTTP API's settings, read from the environment in ONE place (`readApiConfig`), so the
 * config module can take these reads over without touching the server.
 *
 *   UH_API_TOKEN              bearer token; >= 16 chars always, >= 32 beyond loopback; required
 *                             unless `--insecure-loopback` (then a token written to
 *                             `<cache>/api-token`, mode 0600: readable by this user, by no sandbox)
 *   UH_API_ALLOWED_HOSTS      comma list of Host names accepted (default: loopback names when bound to loopback, any otherwise)
 *   UH_API_ALLOWED_ORIGINS    comma list of browser Origins accepted, with CORS for them (default: none)
 *   UH_API_SSE_MAX_CLIENTS    open event streams at most (default 1000; beyond: 503)
 *   UH_API_SSE_KEEPALIVE_MS   keep-alive comment interval on event streams (default 15000)
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { invalidInput } from '../../shared/errors.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface ApiConfig {
  token: string;
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

/** The token file of `--insecure-loopback`, under the cache dir (masked in every sandbox). */
export const apiTokenFile = (cacheDir: string): string => join(cacheDir, 'api-token');

/** `--insecure-loopback`: a fresh token in `<cache>/api-token` (0600), for this user's clients only. */
export function writeLoopbackToken(cacheDir: string): string {
  makeDir(cacheDir, 0o700);
  const token = randomBytes(32).toString('hex');
  const file = apiTokenFile(cacheDir);
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}

/** The token `--insecure-loopback` wrote, for a client of a loopback API; undefined where none. */
export function readLoopbackToken(cacheDir: string): string | undefined {
  try {
    return readFileSync(apiTokenFile(cacheDir), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

function requiredToken(env: NodeJS.ProcessEnv, bindHost: string, mint: (() => string) | undefined): string {
  const loopback = LOOPBACK_HOSTS.has(bindHost);
  if (mint !== undefined && !loopback)
    throw invalidInput(`--insecure-loopback: --host ${bindHost} is not a loopback address`, [], 'bind 127.0.0.1');
  const token = env.UH_API_TOKEN || mint?.();
  if (token === undefined) {
    throw invalidInput(
      loopback
        ? 'UH_API_TOKEN: the API requires a bearer token'
        : `--host ${bindHost}: refusing to serve beyond loopback without a token`,
      [],
      loopback
        ? 'set UH_API_TOKEN (openssl rand -hex 32), or start with --insecure-loopback (a token in <cache>/api-token)'
        : 'set UH_API_TOKEN (clients send Authorization: Bearer <token>)',
    );
  }
  if (token === env.UH_API_TOKEN) {
    const min = loopback ? MIN_TOKEN : MIN_TOKEN_BEYOND_LOOPBACK;
    if (token.length < min) {
      throw invalidInput(
        `UH_API_TOKEN: ${token.length} characters, at least ${min} needed${loopback ? '' : ' beyond loopback'}`,
        [],
        'generate one: openssl rand -hex 32',
      );
    }
  }
  return token;
}

/**
 * Every env read of `uh api start`; `bindHost` is the --host the server listens on;
 * `mintLoopbackToken` (`--insecure-loopback`) makes the token when UH_API_TOKEN is unset.
 */
export function readApiConfig(env: NodeJS.ProcessEnv, bindHost: string, mintLoopbackToken?: () => string): ApiConfig {
  const token = requiredToken(env, bindHost, mintLoopbackToken);
  const loopback = LOOPBACK_HOSTS.has(bindHost);
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
