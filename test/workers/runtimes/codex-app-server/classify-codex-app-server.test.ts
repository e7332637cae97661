import { parseRetryAfterMs } from '../../../../src/shared/runtime/provider-errors.js';
import { describe, expect, it } from 'vitest';
import {
  classifyCodexAppServer,
  classifyTurnError,
  type CodexAppServerClassifyInput,
} from '../../../../src/workers/runtimes/codex-app-server/classify-codex-app-server.js';

const err = (codexErrorInfo: unknown, message = 'm') => ({ message, codexErrorInfo: codexErrorInfo as never });

describe('classifyTurnError: one row per CodexErrorInfo variant', () => {
  it.each([
    ['unauthorized', 'unauthorized', 'blocked', /codex login/],
    ['usageLimitExceeded', 'usageLimitExceeded', 'blocked', /quota/],
    ['sessionBudgetExceeded', 'sessionBudgetExceeded', 'blocked', /quota/],
    ['rateLimitExceeded', 'rateLimitExceeded', 'blocked', /rate limited/],
    ['modelNotFound', 'modelNotFound', 'blocked', /runtime_config.model/],
    ['serverOverloaded', 'serverOverloaded', 'blocked', /capacity/],
    ['flexUnavailable', 'flexUnavailable', 'blocked', /capacity/],
    ['policyCapacityUnavailable', 'policyCapacityUnavailable', 'blocked', /capacity/],
    ['httpConnectionFailed 401', { httpConnectionFailed: { httpStatusCode: 401 } }, 'blocked', /codex login/],
    ['httpConnectionFailed 403', { httpConnectionFailed: { httpStatusCode: 403 } }, 'blocked', /codex login/],
    ['httpConnectionFailed 404', { httpConnectionFailed: { httpStatusCode: 404 } }, 'blocked', /runtime_config.model/],
    ['httpConnectionFailed 429', { httpConnectionFailed: { httpStatusCode: 429 } }, 'blocked', /rate limited/],
    ['httpConnectionFailed 500', { httpConnectionFailed: { httpStatusCode: 500 } }, 'failed', undefined],
    [
      'httpConnectionFailed (no status: unreachable)',
      { httpConnectionFailed: { httpStatusCode: null } },
      'blocked',
      /reachable/,
    ],
    [
      'responseStreamConnectionFailed (unreachable)',
      { responseStreamConnectionFailed: { httpStatusCode: null } },
      'blocked',
      /reachable/,
    ],
    [
      'responseTooManyFailedAttempts 429',
      { responseTooManyFailedAttempts: { httpStatusCode: 429 } },
      'blocked',
      /rate limited/,
    ],
    [
      'responseTooManyFailedAttempts 502',
      { responseTooManyFailedAttempts: { httpStatusCode: 502 } },
      'failed',
      undefined,
    ],
    [
      'responseTooManyFailedAttempts (no status)',
      { responseTooManyFailedAttempts: { httpStatusCode: null } },
      'failed',
      undefined,
    ],
    ['responseStreamDisconnected', { responseStreamDisconnected: { httpStatusCode: null } }, 'failed', undefined],
    ['contextWindowExceeded', 'contextWindowExceeded', 'failed', /out of context/],
    ['cyberPolicy', 'cyberPolicy', 'failed', /policy/],
    ['bioPolicy', 'bioPolicy', 'failed', /policy/],
    ['misalignmentPolicyViolation', 'misalignmentPolicyViolation', 'failed', /policy/],
    ['inferenceHookDenied', 'inferenceHookDenied', 'failed', /policy/],
    ['tooManyDenials', 'tooManyDenials', 'failed', /approvals/],
    ['internalServerError', 'internalServerError', 'failed', undefined],
    ['badRequest', 'badRequest', 'failed', undefined],
    ['sandboxError', 'sandboxError', 'failed', undefined],
    ['threadRollbackFailed', 'threadRollbackFailed', 'failed', undefined],
    ['activeTurnNotSteerable', { activeTurnNotSteerable: { turnKind: 'review' } }, 'failed', undefined],
    ['other', 'other', 'failed', undefined],
    ['a variant this version does not know', 'somethingNew', 'failed', undefined],
    ['no codexErrorInfo', null, 'failed', undefined],
  ] as const)('%s → %s', (_name, info, status, hint) => {
    const verdict = classifyTurnError(err(info));
    expect(verdict.status).toBe(status);
    if (hint) expect(verdict.hint).toMatch(hint);
  });

  it('carries the retry delay of a rate limit', () => {
    expect(
      classifyTurnError(err('rateLimitExceeded', 'Rate limit reached. Please try again in 2.5s.')).retry_after_ms,
    ).toBe(2500);
    expect(parseRetryAfterMs('retry after 7 seconds')).toBe(7000);
    expect(parseRetryAfterMs('try again in 300ms')).toBe(300);
    expect(parseRetryAfterMs('no delay here')).toBeUndefined();
  });
});

const base: CodexAppServerClassifyInput = { binary: 'codex', abort: null, readback: null, dispatch: 'bound' };
const cancel = { kind: 'cancel' as const, message: 'cancelled by user' };
const timeout = { kind: 'timeout' as const, message: 'timed out', timeoutMs: 1000 };

describe('classifyCodexAppServer: priority spawn > readback > not dispatched > unknown', () => {
  it.each([
    [
      'binary missing',
      { spawnError: { code: 'ENOENT', message: 'no such file' } },
      { status: 'blocked', raw: 'spawn:ENOENT' },
    ],
    [
      'readback completed',
      { readback: { status: 'completed', error: null } },
      { status: 'completed', raw: 'readback:completed' },
    ],
    [
      'readback completed even after a late timeout',
      { abort: timeout, readback: { status: 'completed', error: null } },
      { status: 'completed', timed_out: false },
    ],
    [
      'readback interrupted after our cancel',
      { abort: cancel, readback: { status: 'interrupted', error: null } },
      { status: 'cancelled', raw: 'readback:interrupted' },
    ],
    [
      'readback interrupted after our timeout',
      { abort: timeout, readback: { status: 'interrupted', error: null } },
      { status: 'failed', timed_out: true, raw: 'readback:interrupted' },
    ],
    [
      'readback interrupted, not by us',
      { readback: { status: 'interrupted', error: null } },
      { status: 'failed', timed_out: false, raw: 'readback:interrupted' },
    ],
    [
      'readback failed (rate limit)',
      { readback: { status: 'failed', error: err('rateLimitExceeded') } },
      { status: 'blocked', raw: 'readback:failed:rateLimitExceeded' },
    ],
    [
      'readback failed (http 401)',
      { readback: { status: 'failed', error: err({ httpConnectionFailed: { httpStatusCode: 401 } }) } },
      { status: 'blocked', raw: 'readback:failed:httpConnectionFailed' },
    ],
    [
      'cancelled before dispatch',
      { dispatch: 'not_sent', abort: cancel },
      { status: 'cancelled', raw: 'not_dispatched' },
    ],
    [
      'timed out before dispatch',
      { dispatch: 'not_sent', abort: timeout },
      { status: 'failed', timed_out: true, raw: 'not_dispatched' },
    ],
    [
      'setup failure before dispatch',
      { dispatch: 'not_sent', failure: { raw: 'initialize', message: 'x' } },
      { status: 'failed', raw: 'initialize' },
    ],
    [
      'blocked setup failure before dispatch',
      { dispatch: 'not_sent', failure: { raw: 'thread/start', message: 'x', blocked: true } },
      { status: 'blocked', raw: 'thread/start' },
    ],
    ['sent, never read back', { dispatch: 'sent' }, { status: 'failed', raw: 'dispatch:unknown' }],
    [
      'bound, never read back',
      { dispatch: 'bound', failure: { raw: 'readback', message: 'gone' } },
      { status: 'failed', raw: 'dispatch:unknown' },
    ],
  ] as const)('%s', (_name, input, expected) => {
    expect(classifyCodexAppServer({ ...base, ...(input as Partial<CodexAppServerClassifyInput>) })).toMatchObject(
      expected,
    );
  });

  it('tells the operator to recover an unknown operation, never to re-send it', () => {
    expect(classifyCodexAppServer({ ...base, dispatch: 'sent' }).hint).toMatch(/uh mission recover/);
  });
});
