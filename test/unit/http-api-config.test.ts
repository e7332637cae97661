import { describe, expect, it } from 'vitest';
import { readApiConfig } from '../../src/producers/http/api-config.js';
import { compareIds, STREAM_ID } from '../../src/producers/http/event-hub.js';
import { hostName } from '../../src/producers/http/guards.js';
import { sha256, tokenEntry } from '../../src/producers/http/api-tokens.js';
import { parseJsonBody } from '../../src/producers/http/api-server.js';

const errorOf = (f: () => unknown): string => {
  try {
    f();
    return '';
  } catch (error) {
    return (error as Error).message;
  }
};

const T = { UH_API_TOKEN: 't'.repeat(16) };

describe('HTTP API config', () => {
  it('refuses short tokens and a missing token (loopback too, unless --insecure-loopback mints one), naming UH_API_TOKEN', () => {
    expect(errorOf(() => readApiConfig({ UH_API_TOKEN: 'short' }, '127.0.0.1'))).toMatch(
      /^UH_API_TOKEN: 5 characters, at least 16/,
    );
    expect(errorOf(() => readApiConfig({ UH_API_TOKEN: 'x'.repeat(31) }, '0.0.0.0'))).toMatch(
      /^UH_API_TOKEN: 31 characters, at least 32 needed beyond loopback/,
    );
    expect(errorOf(() => readApiConfig({}, '10.0.0.5'))).toMatch(/refusing to serve beyond loopback without a token/);
    expect(errorOf(() => readApiConfig({}, '127.0.0.1'))).toMatch(/^UH_API_TOKEN: the API requires a bearer token/);
    const minted = 'm'.repeat(64);
    const only = (c: { tokens: readonly { sha256: Buffer }[] }) => c.tokens.map((t) => t.sha256.toString('hex'));
    expect(only(readApiConfig({}, '127.0.0.1', () => minted))).toEqual([sha256(minted).toString('hex')]);
    expect(only(readApiConfig({ UH_API_TOKEN: 'x'.repeat(16) }, '127.0.0.1', () => minted))).toEqual([
      sha256('x'.repeat(16)).toString('hex'),
    ]);
    let mintedBeyond = false;
    const mint = () => ((mintedBeyond = true), minted);
    expect(errorOf(() => readApiConfig({}, '0.0.0.0', mint))).toMatch(/^--insecure-loopback: --host 0.0.0.0 is not/);
    expect(mintedBeyond).toBe(false);
    expect(readApiConfig({ UH_API_TOKEN: 'x'.repeat(16) }, 'localhost').tokens[0]?.scopes.has('admin')).toBe(true);
  });

  it('serves loopback Host names on loopback, any Host beyond it unless configured, and no Origin unless listed', () => {
    expect([...(readApiConfig(T, '127.0.0.1').allowedHosts ?? [])]).toContain('localhost');
    expect(readApiConfig({ UH_API_TOKEN: 'y'.repeat(32) }, '0.0.0.0').allowedHosts).toBeNull();
    expect([
      ...(readApiConfig({ ...T, UH_API_ALLOWED_HOSTS: 'Uh.Example, api.internal' }, '127.0.0.1').allowedHosts ?? []),
    ]).toEqual(['uh.example', 'api.internal']);
    expect(readApiConfig(T, '127.0.0.1').allowedOrigins.size).toBe(0);
    expect(errorOf(() => readApiConfig({ ...T, UH_API_SSE_MAX_CLIENTS: '0' }, '127.0.0.1'))).toMatch(
      /^UH_API_SSE_MAX_CLIENTS: "0" must be a positive integer/,
    );
  });

  it('parses Host headers, compares tokens, orders stream ids, refuses __proto__ in bodies', () => {
    expect(hostName('LocalHost:8787')).toBe('localhost');
    expect(hostName('[::1]:8787')).toBe('[::1]');
    const { tokens } = readApiConfig({ UH_API_TOKEN: 'a'.repeat(20) }, '127.0.0.1');
    expect(tokenEntry(tokens, 'a'.repeat(20))?.id).toBe('api-token');
    expect(tokenEntry(tokens, 'a'.repeat(19))).toBeNull();
    expect(compareIds('1700000000000-2', '1700000000000-10')).toBeLessThan(0);
    expect(compareIds('1700000000001-0', '1700000000000-10')).toBeGreaterThan(0);
    expect(STREAM_ID.test('1-0')).toBe(true);
    expect(STREAM_ID.test('0')).toBe(false);
    expect(errorOf(() => parseJsonBody('{"a":{"__proto__":{"x":1}}}'))).toMatch(/__proto__/);
    expect(errorOf(() => parseJsonBody('{oops'))).toMatch(/^body is not valid JSON/);
  });
});
