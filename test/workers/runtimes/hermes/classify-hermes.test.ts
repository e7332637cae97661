import { describe, expect, it } from 'vitest';
import { classifyHermes, type HermesExitFacts } from '../../../../src/workers/runtimes/hermes/classify-hermes.js';

const ok: HermesExitFacts = {
  binary: 'hermes',
  mode: 'stream-json',
  exitCode: 0,
  signal: null,
  timedOut: false,
  abort: null,
  stderrTail: 'session_id: 20261130_101500_fa4e01',
  stdoutTail: '',
  result: { exit_code: 0 },
};
const failed = (error: string, exit = 1): Partial<HermesExitFacts> => ({
  exitCode: exit,
  result: { exit_code: exit, error },
});
const cancel = { kind: 'cancel' as const, message: 'cancelled by user' };
const timeout = { kind: 'timeout' as const, message: 'mission timed out after 5 s', timeoutMs: 5000 };

describe('classifyHermes', () => {
  // One row per row of the classification table in docs/runtimes/hermes.md.
  it.each<[string, Partial<HermesExitFacts>, string, string, boolean?]>([
    [
      'missing binary',
      { exitCode: null, result: null, spawnError: { code: 'ENOENT', message: 'spawn hermes ENOENT' } },
      'blocked',
      'spawn:ENOENT',
    ],
    [
      'binary not executable',
      { exitCode: null, result: null, spawnError: { code: 'EACCES', message: 'EACCES' } },
      'blocked',
      'spawn:EACCES',
    ],
    ['mission timeout', { exitCode: null, signal: 'SIGTERM', result: null, abort: timeout }, 'failed', 'timeout', true],
    [
      'cancel (interrupted result 130)',
      { exitCode: 130, result: { exit_code: 130 }, abort: cancel },
      'cancelled',
      'cancel',
    ],
    [
      'auth failure in the result',
      failed("Error code: 401 - {'error': {'message': 'Invalid API key'}}"),
      'blocked',
      'provider:auth',
    ],
    [
      'auth failure on stderr (text mode)',
      { mode: 'text', result: null, exitCode: 1, stderrTail: 'Error: Error code: 401 - Invalid API key' },
      'blocked',
      'provider:auth',
    ],
    [
      'not logged in (stdout, text mode)',
      { mode: 'text', result: null, exitCode: 1, stdoutTail: 'Not logged in. Run `hermes login` first.' },
      'blocked',
      'provider:auth',
    ],
    ['quota', failed("Error code: 429 - {'error': {'code': 'insufficient_quota'}}"), 'blocked', 'provider:quota'],
    [
      'rate limit',
      failed('Error code: 429 - Rate limit exceeded. Please try again in 7s.'),
      'blocked',
      'provider:rate_limit',
    ],
    ['unknown model', failed("Error code: 404 - model 'x/y' not found"), 'blocked', 'provider:model'],
    // Hermes' own summaries (agent/api_error_summary.py 007da72f): `HTTP <status>: <message>`.
    ['auth, Hermes summary', failed('HTTP 401: Incorrect API key provided: sk-wrong.'), 'blocked', 'provider:auth'],
    [
      'quota, Hermes summary',
      failed('HTTP 429: You exceeded your current quota, please check your plan and billing details.'),
      'blocked',
      'provider:quota',
    ],
    [
      'rate limit, Hermes summary',
      failed('HTTP 429: Rate limit reached for requests. Please try again in 7s.'),
      'blocked',
      'provider:rate_limit',
    ],
    [
      'a 500 after the retries, Hermes summary',
      failed('HTTP 500: The server had an error while processing your request.'),
      'failed',
      'result:exit_code:1',
    ],
    ['killed by a signal', { exitCode: null, signal: 'SIGKILL', result: null }, 'failed', 'signal:SIGKILL'],
    [
      'python missing (exit 127)',
      { exitCode: 127, result: null, stderrTail: 'env: python3: No such file or directory' },
      'blocked',
      'exit:127',
    ],
    [
      'failed result (not an operator problem)',
      failed('Agent loop stopped: empty responses'),
      'failed',
      'result:exit_code:1',
    ],
    [
      'a bare error with exit_code 0 (releases before b817e728)',
      { exitCode: 0, result: { exit_code: 0, error: 'provider unavailable' } },
      'failed',
      'result:exit_code:0',
    ],
    [
      'crash with a traceback (no result)',
      {
        exitCode: 1,
        result: null,
        stderrTail: 'Traceback (most recent call last):\n  File "run_agent.py", line 401, in run\nRuntimeError: boom',
      },
      'failed',
      'exit:1',
    ],
    ['stream-json without a result, exit 0', { result: null }, 'failed', 'stream-json:no_result'],
    ['text mode, exit 0', { mode: 'text', result: null }, 'completed', 'exit:0'],
    ['stream-json result exit_code 0', {}, 'completed', 'exit:0'],
  ])('%s', (_name, facts, status, raw, timedOut = false) => {
    const outcome = classifyHermes({ ...ok, ...facts });
    expect(outcome.status).toBe(status);
    expect(outcome.raw).toBe(raw);
    expect(outcome.timed_out).toBe(timedOut);
  });

  it('gives the retry delay of a rate limit and a hint for every blocked outcome', () => {
    const outcome = classifyHermes({
      ...ok,
      ...failed('Error code: 429 - Rate limit exceeded. Please try again in 7s.'),
    });
    expect(outcome.retry_after_ms).toBe(7000);
    expect(outcome.hint).toBeTruthy();
    expect(
      classifyHermes({ ...ok, exitCode: null, result: null, spawnError: { code: 'ENOENT', message: 'x' } }).hint,
    ).toContain('0.14.0');
  });
});
