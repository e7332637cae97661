import { describe, expect, it } from 'vitest';
import { parseOrThrow } from '../../../../src/shared/contracts/zod-issues.js';
import { UhError } from '../../../../src/shared/errors.js';
import { HermesProxySettingsSchema } from '../../../../src/workers/runtimes/hermes-proxy/hermes-proxy-settings.js';

function problems(input: unknown): string[] {
  try {
    parseOrThrow(HermesProxySettingsSchema, input, 'runtime_config', 'runtime_config.');
  } catch (error) {
    if (UhError.isInstance(error)) return [...error.details];
    throw error;
  }
  return [];
}

describe('hermes-proxy runtime_config', () => {
  it('fills the defaults of the spike', () => {
    expect(HermesProxySettingsSchema.parse({ model: 'hermes-4-405b' })).toEqual({
      endpoint: 'http://127.0.0.1:8645/v1',
      model: 'hermes-4-405b',
      auth_token: 'hermes-proxy-placeholder',
      temperature: 0,
      request_timeout_ms: 300_000,
      stream: true,
      extra_headers: {},
    });
  });

  it.each([
    ['a typo such as endpoiint', { model: 'm', endpoiint: 'http://x/v1' }, 'runtime_config.endpoiint: unknown key'],
    ['a typo such as modle (and the missing model)', { modle: 'm' }, 'runtime_config.modle: unknown key'],
    ['no model', {}, 'runtime_config.model:'],
    [
      'a non-http endpoint',
      { model: 'm', endpoint: 'ftp://127.0.0.1/v1' },
      'runtime_config.endpoint: must be an http(s) URL',
    ],
    ['an unknown provider', { model: 'm', provider: 'acme' }, 'runtime_config.provider:'],
    ['temperature out of range', { model: 'm', temperature: 3 }, 'runtime_config.temperature:'],
    [
      'a blank bearer',
      { model: 'm', auth_token: '  ' },
      'runtime_config.auth_token: must be a non-empty single-line string',
    ],
    [
      'extra_headers overriding the bearer',
      { model: 'm', extra_headers: { Authorization: 'Bearer x' } },
      'runtime_config.extra_headers.Authorization: is set by the adapter',
    ],
    [
      'an extra header value with a newline',
      { model: 'm', extra_headers: { 'x-a': 'a\nb' } },
      'runtime_config.extra_headers.x-a: must be a single line',
    ],
  ])('rejects %s, naming the path', (_name, input, expected) => {
    expect(problems(input).join('\n')).toContain(expected);
  });

  it('re-parses a mission override merged over the manifest strictly', () => {
    const manifest = { endpoint: 'http://127.0.0.1:8645/v1', model: 'hermes-4-405b' };
    expect(HermesProxySettingsSchema.parse({ ...manifest, ...{ model: 'hermes-4-70b', stream: false } })).toMatchObject(
      { model: 'hermes-4-70b', stream: false },
    );
    expect(problems({ ...manifest, ...{ max_token: 10 } })).toEqual(['runtime_config.max_token: unknown key']);
  });

  it('strips a trailing slash from the endpoint', () => {
    expect(HermesProxySettingsSchema.parse({ model: 'm', endpoint: 'http://127.0.0.1:8645/v1/' }).endpoint).toBe(
      'http://127.0.0.1:8645/v1',
    );
  });
});
