import { describe, expect, it } from 'vitest';
import { classifyPi, type PiExitFacts } from '../../../../src/workers/runtimes/pi/classify-pi.js';

const ok: PiExitFacts = {
  runtime: 'pi',
  binary: 'pi',
  install: 'npm i -g @mariozechner/pi-coding-agent',
  exitCode: 0,
  signal: null,
  timedOut: false,
  abort: null,
  stderrTail: '',
  lastStopReason: 'stop',
  lastErrorMessage: null,
  finalText: 'done',
};
const cancel = { kind: 'cancel' as const, message: 'cancelled by user' };
const timeout = { kind: 'timeout' as const, message: 'mission timed out after 5 s', timeoutMs: 5000 };
const stopErr = (m: string): Partial<PiExitFacts> => ({
  lastStopReason: 'error',
  lastErrorMessage: m,
  finalText: null,
});

describe('classifyPi', () => {
  // One row per row of the classification table in docs/runtimes/pi.md.
  it.each<[string, Partial<PiExitFacts>, string, string, boolean?]>([
    [
      'missing binary',
      { exitCode: null, spawnError: { code: 'ENOENT', message: 'spawn pi ENOENT' } },
      'blocked',
      'spawn:ENOENT',
    ],
    [
      'binary not executable',
      { exitCode: null, spawnError: { code: 'EACCES', message: 'spawn EACCES' } },
      'blocked',
      'spawn:EACCES',
    ],
    [
      'mission timeout (signal reason)',
      { exitCode: null, signal: 'SIGTERM', abort: timeout },
      'failed',
      'timeout',
      true,
    ],
    ['timeout from the transport', { exitCode: null, signal: 'SIGTERM', timedOut: true }, 'failed', 'timeout', true],
    ['cancel', { exitCode: 143, abort: cancel }, 'cancelled', 'cancel'],
    [
      'cancel wins over a provider error seen before',
      { abort: cancel, ...stopErr('401 Incorrect API key') },
      'cancelled',
      'cancel',
    ],
    ['401 from the provider (pi exits 0)', stopErr('401 Incorrect API key provided.'), 'blocked', 'provider:auth'],
    [
      'no API key at start-up (exit 1, stderr)',
      { exitCode: 1, finalText: null, lastStopReason: null, stderrTail: 'No API key found for the selected model.' },
      'blocked',
      'provider:auth',
    ],
    [
      'quota',
      stopErr('429 You exceeded your current quota, please check your plan and billing details.'),
      'blocked',
      'provider:quota',
    ],
    ['rate limit', stopErr('429 Rate limit reached. Please try again in 20s.'), 'blocked', 'provider:rate_limit'],
    ['unknown model', stopErr('404 The model `gpt-9` does not exist'), 'blocked', 'provider:model'],
    ['HTTP 500 from the provider (pi exits 0)', stopErr('500 upstream exploded'), 'failed', 'stopReason:error'],
    [
      'request aborted by pi itself',
      { lastStopReason: 'aborted', lastErrorMessage: null, finalText: null },
      'failed',
      'stopReason:aborted',
    ],
    [
      'provider error and exit 1 (oh-my-pi)',
      { exitCode: 1, ...stopErr('500 internal server error') },
      'failed',
      'stopReason:error',
    ],
    [
      'killed by a signal (crash)',
      { exitCode: null, signal: 'SIGKILL', lastStopReason: null, finalText: null },
      'failed',
      'signal:SIGKILL',
    ],
    [
      'node missing (exit 127)',
      { exitCode: 127, finalText: null, lastStopReason: null, stderrTail: 'env: node: No such file or directory' },
      'blocked',
      'exit:127',
    ],
    [
      'crash with a stack trace (exit 1)',
      {
        exitCode: 1,
        finalText: null,
        lastStopReason: null,
        stderrTail: "TypeError: Cannot read properties of undefined (reading 'content')",
      },
      'failed',
      'exit:1',
    ],
    ['exit 0 without a final assistant message', { finalText: null }, 'failed', 'no_final_message'],
    ['exit 0 with a final assistant message', {}, 'completed', 'exit:0'],
  ])('%s', (_name, facts, status, raw, timedOut = false) => {
    const outcome = classifyPi({ ...ok, ...facts });
    expect(outcome.status).toBe(status);
    expect(outcome.raw).toBe(raw);
    expect(outcome.timed_out).toBe(timedOut);
  });

  it('carries the retry delay of a rate limit and a hint for every blocked outcome', () => {
    const outcome = classifyPi({ ...ok, ...stopErr('429 Rate limit reached. Please try again in 20s.') });
    expect(outcome.retry_after_ms).toBe(20_000);
    expect(outcome.hint).toMatch(/rate limit/);
    const missing = classifyPi({ ...ok, exitCode: null, spawnError: { code: 'ENOENT', message: 'x' } });
    expect(missing.message).toContain('binary not found: pi');
    expect(missing.hint).toContain('npm i -g @mariozechner/pi-coding-agent');
  });

  it('does not read a stale stderr warning when the run succeeded', () => {
    const outcome = classifyPi({
      ...ok,
      stderrTail: 'Warning: Model "x" not found for provider "y". Using custom model id.',
    });
    expect(outcome.status).toBe('completed');
  });
});
