/**
 * The HTTP API's settings, read from the environment in ONE place (`readApiConfig`), so the
 * config module can take these reads over without touching the server.
 *
 *   UH_API_TOKEN              bearer token (an admin token); >= 16 chars always, >= 32 beyond loopback;
 *                             required unless UH_API_TOKENS_FILE or `--insecure-loopback` (then a
 *                             token written to `<cache>/api-token`, mode 0600: readable by this user, by no sandbox)
 *   UH_API_TOKENS_FILE        tokens with scopes and a tenant, SHA-256 hashes only (api-tokens.ts)
 *   UH_TENANT                 the tenant of the admin token (and of CLI/inline producers); default `default`
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
import { adminEntry, readTokensFile, TenantSchema, type TokenEntry } from './api-tokens.js';

export interface ApiConfig {
  /** Every token the server accepts (hashes only): the tokens file's, plus UH_API_TOKEN as an admin token. */
  tokens: readonly TokenEntry[];
  /** Keys the dashboard's session cookie (HMAC of the token id and hash): never sent, never logged. */
  sessionKey: Buffer;
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

/** The dashboard session key in `<cache>/api-session.key` (0600), made on first start: cookies outlive a restart. */
export function apiSessionKey(cacheDir: string): Buffer {
  const file = join(cacheDir, 'api-session.key');
  try {
    const hex = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f]{64}$/.test(hex)) return Buffer.from(hex, 'hex');
  } catch {
    // made below
  }
  makeDir(cacheDir, 0o700);
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return key;
}

/** The token `--insecure-loopback` wrote, for a client of a loopback API; undefined where none. */
export function readLoopbackToken(cacheDir: string): string | undefined {
  try {
    return readFileSync(apiTokenFile(cacheDir), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

function requiredToken(
  env: NodeJS.ProcessEnv,
  bindHost: string,
  mint: (() => string) | undefined,
  hasFile: boolean,
): string | undefined {
  const loopback = LOOPBACK_HOSTS.has(bindHost);
  if (mint !== undefined && !loopback)
    throw invalidInput(`--insecure-loopback: --host ${bindHost} is not a loopback address`, [], 'bind 127.0.0.1');
  const token = env.UH_API_TOKEN || (hasFile ? undefined : mint?.());
  if (token === undefined && !hasFile) {
    throw invalidInput(
      loopback
        ? 'UH_API_TOKEN: the API requires a bearer token'
        : `--host ${bindHost}: refusing to serve beyond loopback without a token`,
      [],
      loopback
        ? 'set UH_API_TOKEN (openssl rand -hex 32) or UH_API_TOKENS_FILE, or start with --insecure-loopback (a token in <cache>/api-token)'
        : 'set UH_API_TOKEN or UH_API_TOKENS_FILE (clients send Authorization: Bearer <token>)',
    );
  }
  if (token !== undefined && token === env.UH_API_TOKEN) {
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

/** UH_TENANT: the tenant of the admin token and of CLI producers (`default` when unset). */
export function defaultTenant(env: NodeJS.ProcessEnv): string {
  const raw = env.UH_TENANT || 'default';
  const parsed = TenantSchema.safeParse(raw);
  if (!parsed.success) throw invalidInput(`UH_TENANT: "${raw.slice(0, 80)}": ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

/** The tokens the server accepts: the file's entries, then UH_API_TOKEN (or the loopback token) as admin. */
function tokenEntries(env: NodeJS.ProcessEnv, bindHost: string, mint: (() => string) | undefined): TokenEntry[] {
  const file = env.UH_API_TOKENS_FILE || undefined;
  const entries = file ? readTokensFile(file) : [];
  const token = requiredToken(env, bindHost, mint, file !== undefined);
  if (token !== undefined) entries.push(adminEntry('api-token', token, defaultTenant(env)));
  return entries;
}

/**
 * Every env read of `uh api start`; `bindHost` is the --host the server listens on;
 * `mintLoopbackToken` (`--insecure-loopback`) makes the token when UH_API_TOKEN is unset;
 * `sessionKey` keys the dashboard cookies (`apiSessionKey`: kept in the cache dir; default a fresh
 * one: sessions then end with the process).
 */
export function readApiConfig(
  env: NodeJS.ProcessEnv,
  bindHost: string,
  mintLoopbackToken?: () => string,
  sessionKey: Buffer = randomBytes(32),
): ApiConfig {
  const tokens = tokenEntries(env, bindHost, mintLoopbackToken);
  const loopback = LOOPBACK_HOSTS.has(bindHost);
  const hosts = list(env.UH_API_ALLOWED_HOSTS).map((h) => h.toLowerCase());
  return {
    tokens,
    sessionKey,
    allowedHosts: hosts.length > 0 ? new Set(hosts) : loopback ? LOOPBACK_HOSTS : null,
    allowedOrigins: new Set(list(env.UH_API_ALLOWED_ORIGINS)),
    sseMaxClients: positiveInt(env, 'UH_API_SSE_MAX_CLIENTS', 1000),
    keepAliveMs: positiveInt(env, 'UH_API_SSE_KEEPALIVE_MS', 15_000),
    bodyLimit: 1024 * 1024,
  };
}
