import { describe, expect, it } from 'vitest';
import {
  PROVIDER_ERRORS,
  matchProviderError,
  parseRetryAfterMs,
  providerErrorHint,
} from '../../../src/shared/runtime/provider-errors.js';

describe('matchProviderError', () => {
  it.each<[string, string | null]>([
    ['401 Incorrect API key provided.', 'auth'],
    ["Error code: 401 - {'error': {'message': 'Invalid API key'}}", 'auth'],
    ['No API key found for the selected model.', 'auth'],
    ['Not logged in. Run hermes login.', 'auth'],
    ['429 You exceeded your current quota, please check your plan and billing details.', 'quota'],
    ['Error code: 402 - insufficient credits', 'quota'],
    ['429 Too Many Requests', 'rate_limit'],
    ['rate_limit_exceeded: slow down', 'rate_limit'],
    [
      'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 1 second. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.',
      'rate_limit',
    ],
    ['404 The model `gpt-9` does not exist or you do not have access to it.', 'model'],
    ["You've hit your usage limit. Try again in 3 minutes.", 'usage_limit'],
    ['error sending request for url (https://api.openai.com/v1/responses): Connection refused', 'unreachable'],
    ['500 upstream exploded', null],
    ['  File "/usr/lib/python3/agent.py", line 401, in run\nKeyError: x', null],
    ['', null],
  ])('%s → %s', (text, kind) => {
    expect(matchProviderError(text)?.kind ?? null).toBe(kind);
  });

  it.each<[string, number | undefined]>([
    ['Please try again in 20s.', 20_000],
    ['retry after 1.5 seconds', 1500],
    ['Retry-After: 30', 30_000],
    ['try again in 250ms', 250],
    ['try again in 2 minutes', 120_000],
    ['slow down', undefined],
  ])('retry delay of %s', (text, ms) => {
    expect(parseRetryAfterMs(text)).toBe(ms);
  });

  it('gives the retry delay of the kinds that pass by themselves only', () => {
    expect(matchProviderError("You've hit your usage limit. Try again in 3 minutes.")).toEqual({
      kind: 'usage_limit',
      retryAfterMs: 180_000,
    });
    expect(matchProviderError('401 Unauthorized, try again in 5s')).toEqual({ kind: 'auth' });
  });

  it('narrows the rows asked with kinds', () => {
    expect(matchProviderError('Connection refused', ['auth', 'quota'])).toBeNull();
  });

  it.each(PROVIDER_ERRORS.map((r) => r.kind))(
    "hints for %s: the runtime's own wording, else the generic row naming the runtime",
    (kind) => {
      expect(providerErrorHint(kind, 'codex')).toMatch(/codex|CODEX_HOME|config\.toml/);
      expect(providerErrorHint(kind, 'pi')).toContain('pi');
    },
  );
});
