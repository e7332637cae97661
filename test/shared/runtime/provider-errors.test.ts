import { describe, expect, it } from 'vitest';
import { matchProviderError, parseRetryAfterMs } from '../../../src/shared/runtime/provider-errors.js';

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
    ['404 The model `gpt-9` does not exist or you do not have access to it.', 'model'],
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
});
