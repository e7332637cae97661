import { describe, expect, it } from 'vitest';
import { classifyAcp, type AcpRunFacts } from '../../../../src/workers/runtimes/acp/classify-acp.js';
import { HERMES_HINTS } from '../../../../src/workers/runtimes/hermes-acp/hermes-acp-hints.js';

const HINTS = { install: 'install it', auth: 'log it in' };
const facts = (over: Partial<AcpRunFacts>): AcpRunFacts => ({
  stopReason: null,
  failure: null,
  abort: null,
  turnTimedOut: false,
  program: 'agent',
  ...over,
});
const cancel = { kind: 'cancel', message: 'cancelled by user' } as const;
const timeout = { kind: 'timeout', message: 'mission timed out', timeoutMs: 1000 } as const;
const remote = (code: number, message: string) =>
  ({ kind: 'remote', method: 'session/prompt', code, message }) as const;
const crash = { kind: 'exited', message: 'agent exited with code 1: boom', exitCode: 1, signal: null } as const;

describe('classifyAcp', () => {
  it.each<[string, Partial<AcpRunFacts>, string, string, boolean]>([
    ['stopReason end_turn', { stopReason: 'end_turn' }, 'completed', 'stop:end_turn', false],
    ['stopReason max_tokens', { stopReason: 'max_tokens' }, 'failed', 'stop:max_tokens', false],
    ['stopReason max_turn_requests', { stopReason: 'max_turn_requests' }, 'failed', 'stop:max_turn_requests', false],
    ['stopReason refusal (also: unknown session)', { stopReason: 'refusal' }, 'failed', 'stop:refusal', false],
    ['stopReason cancelled, not asked by us', { stopReason: 'cancelled' }, 'cancelled', 'stop:cancelled', false],
    ['an invented stopReason', { stopReason: 'took_a_nap' }, 'failed', 'stop:took_a_nap', false],
    ['no prompt answer', {}, 'failed', 'no_stop_reason', false],
    [
      'our cancel (prompt answered cancelled)',
      { stopReason: 'cancelled', abort: cancel },
      'cancelled',
      'cancel',
      false,
    ],
    ['mission timeout', { stopReason: 'cancelled', abort: timeout }, 'failed', 'timeout', true],
    ['turn deadline', { stopReason: 'cancelled', turnTimedOut: true }, 'failed', 'turn_timeout', true],
    ['child crash mid-turn', { failure: crash }, 'failed', 'exit:1', false],
    [
      'child killed by a signal',
      { failure: { ...crash, exitCode: null, signal: 'SIGKILL' } },
      'failed',
      'signal:SIGKILL',
      false,
    ],
    [
      'missing binary',
      { failure: { kind: 'spawn', code: 'ENOENT', message: 'spawn agent ENOENT' } },
      'blocked',
      'spawn:ENOENT',
      false,
    ],
    [
      'binary not executable',
      { failure: { kind: 'spawn', code: 'EACCES', message: 'spawn agent EACCES' } },
      'blocked',
      'spawn:EACCES',
      false,
    ],
    [
      'auth required',
      { failure: { kind: 'auth_required', message: 'only terminal auth methods' } },
      'blocked',
      'auth_required',
      false,
    ],
    [
      'no answer to initialize',
      {
        failure: { kind: 'request_timeout', method: 'initialize', message: 'initialize got no answer within 60000 ms' },
      },
      'failed',
      'request_timeout:initialize',
      true,
    ],
    [
      'error answer',
      { failure: { kind: 'remote', method: 'session/prompt', code: -32603, message: 'Internal error' } },
      'failed',
      'rpc:-32603',
      false,
    ],
    [
      'rate limited',
      {
        failure: {
          kind: 'remote',
          method: 'session/prompt',
          code: -32603,
          message: 'Error code: 429 - rate limit exceeded',
        },
      },
      'blocked',
      'rate_limited',
      false,
    ],
    [
      '429 only in error.data',
      { failure: remote(-32603, 'Internal error: {"message":"unexpected status 429 Too Many Requests"}') },
      'blocked',
      'rate_limited',
      false,
    ],
    [
      'Azure OpenAI 429 (links quotaincrease), as opencode answers it',
      {
        failure: remote(
          -32603,
          'Internal error: Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 1 second. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.: {"service":"session","errorName":"APIError"}',
        ),
      },
      'blocked',
      'rate_limited',
      false,
    ],
    ['error code 429', { failure: remote(429, 'Resource has been exhausted') }, 'blocked', 'rate_limited', false],
    [
      'quota',
      { failure: remote(-32603, 'You exceeded your current quota, please check your plan and billing details') },
      'blocked',
      'quota_exhausted',
      false,
    ],
    [
      '401: Incorrect API key provided (-32603)',
      { failure: remote(-32603, 'Internal error: Incorrect API key provided.') },
      'blocked',
      'auth_failed',
      false,
    ],
    [
      '401 as the code, "status":"UNAUTHENTICATED"',
      { failure: remote(401, '{"error":{"code":401,"message":"API key not valid.","status":"UNAUTHENTICATED"}}') },
      'blocked',
      'auth_failed',
      false,
    ],
    [
      'UNAUTHENTICATED without a 401',
      { failure: remote(-32603, 'Request failed: "status":"UNAUTHENTICATED"') },
      'blocked',
      'auth_failed',
      false,
    ],
    [
      'Invalid API key · Fix external API key',
      { failure: remote(-32603, 'Invalid API key · Fix external API key') },
      'blocked',
      'auth_failed',
      false,
    ],
    [
      '401 only in error.data',
      { failure: remote(-32603, 'Internal error: {"message":"unexpected status 401 Unauthorized: bad key"}') },
      'blocked',
      'auth_failed',
      false,
    ],
    [
      '500 only in error.data stays failed',
      { failure: remote(-32603, 'Internal error: {"message":"unexpected status 500 Internal Server Error"}') },
      'failed',
      'rpc:-32603',
      false,
    ],
    ['unknown model', { failure: remote(-32603, 'model "gpt-9" not found') }, 'blocked', 'model_unavailable', false],
    [
      'cancel wins over a provider error',
      { failure: remote(401, 'UNAUTHENTICATED'), abort: cancel },
      'cancelled',
      'cancel',
      false,
    ],
    [
      'protocol violation',
      { failure: { kind: 'protocol', message: 'session/new answered an invalid result' } },
      'failed',
      'protocol',
      false,
    ],
    ['cancel wins over the crash it caused', { failure: crash, abort: cancel }, 'cancelled', 'cancel', false],
    [
      'missing binary wins over cancel',
      { failure: { kind: 'spawn', code: 'ENOENT', message: 'x' }, abort: cancel },
      'blocked',
      'spawn:ENOENT',
      false,
    ],
  ])('%s', (_name, over, status, raw, timedOut) => {
    const outcome = classifyAcp(facts(over), HINTS);
    expect(outcome.status).toBe(status);
    expect(outcome.raw).toBe(raw);
    expect(outcome.timed_out).toBe(timedOut);
    if (status === 'blocked') expect(outcome.hint).toBeTruthy();
  });

  it('points a refused credential at the credentials, naming the agent', () => {
    const outcome = classifyAcp(
      facts({ program: '/opt/bin/opencode', failure: remote(-32603, 'Internal error: Incorrect API key provided.') }),
      HINTS,
    );
    expect(outcome.hint).toMatch(/opencode credentials were refused.*API key/);
    expect(outcome.message).toContain('Incorrect API key provided');
  });

  it('hermes-acp points a blocked auth at hermes setup', () => {
    const outcome = classifyAcp(facts({ failure: { kind: 'auth_required', message: 'x' } }), HERMES_HINTS);
    expect(outcome.hint).toContain('hermes setup');
  });
});
