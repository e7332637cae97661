import { describe, expect, it } from 'vitest';
import { classifyCodex, type CodexRunFacts } from '../../../../src/workers/runtimes/codex/classify-codex.js';
import { parseRetryAfterMs } from '../../../../src/shared/runtime/provider-errors.js';

const ok: CodexRunFacts = {
  binary: 'codex',
  exitCode: 0,
  signal: null,
  timedOut: false,
  abort: null,
  turnCompleted: true,
  turnFailed: null,
  lastError: null,
  stderrTail: '',
  exitMessage: 'exited with code 0',
  lastMessagePresent: true,
};
const failedTurn = (message: string): Partial<CodexRunFacts> => ({
  exitCode: 1,
  turnCompleted: false,
  turnFailed: message,
  lastError: message,
  lastMessagePresent: false,
  exitMessage: 'exited with code 1',
});

// One row per row of the classification table in docs/runtimes/codex.md.
const rows: Array<
  [string, Partial<CodexRunFacts>, { status: string; raw: string; timed_out?: boolean; retry?: number }]
> = [
  [
    'missing binary',
    { spawnError: { code: 'ENOENT', message: 'spawn codex ENOENT' }, exitCode: null },
    { status: 'blocked', raw: 'spawn:ENOENT' },
  ],
  [
    'binary not executable',
    { spawnError: { code: 'EACCES', message: 'spawn EACCES' }, exitCode: null },
    { status: 'blocked', raw: 'spawn:EACCES' },
  ],
  [
    'process timeout',
    { timedOut: true, exitCode: null, signal: 'SIGTERM' },
    { status: 'failed', raw: 'timeout', timed_out: true },
  ],
  [
    'mission timeout',
    { abort: { kind: 'timeout', message: 'mission timed out', timeoutMs: 1000 }, exitCode: null, signal: 'SIGTERM' },
    { status: 'failed', raw: 'timeout', timed_out: true },
  ],
  [
    'cancel',
    { abort: { kind: 'cancel', message: 'cancelled by user' }, exitCode: null, signal: 'SIGTERM' },
    { status: 'cancelled', raw: 'cancel' },
  ],
  ['turn completed, exit 0', {}, { status: 'completed', raw: 'turn.completed' }],
  [
    'turn completed with non-fatal error items',
    { lastError: 'Reconnecting... 2/5 (stream disconnected)' },
    { status: 'completed', raw: 'turn.completed' },
  ],
  [
    'stopped by the adapter: endpoint unreachable too long',
    {
      gaveUpUnreachable: true,
      exitCode: null,
      signal: 'SIGTERM',
      turnCompleted: false,
      lastError: 'Reconnecting... waiting for network',
    },
    { status: 'blocked', raw: 'unreachable' },
  ],
  [
    '401 Unauthorized',
    failedTurn('unexpected status 401 Unauthorized: Incorrect API key provided'),
    { status: 'blocked', raw: 'auth' },
  ],
  [
    'not logged in (stderr)',
    {
      exitCode: 1,
      turnCompleted: false,
      lastMessagePresent: false,
      stderrTail: 'Error: Not logged in. Run codex login.',
    },
    { status: 'blocked', raw: 'auth' },
  ],
  [
    'missing provider key',
    failedTurn('Missing environment variable: `UH_MOCK_KEY`.'),
    { status: 'blocked', raw: 'auth' },
  ],
  [
    'usage limit',
    failedTurn("You've hit your usage limit. Try again in 3 minutes."),
    { status: 'blocked', raw: 'usage_limit', retry: 180_000 },
  ],
  ['quota', failedTurn('Quota exceeded. Check your plan and billing details.'), { status: 'blocked', raw: 'quota' }],
  [
    'rate limit',
    failedTurn('exceeded retry limit, last status: 429 Too Many Requests'),
    { status: 'blocked', raw: 'rate_limit', retry: 60_000 },
  ],
  [
    'unknown model',
    failedTurn('unexpected status 404 Not Found: The model `gpt-9` does not exist'),
    { status: 'blocked', raw: 'unknown_model' },
  ],
  [
    'unreachable endpoint',
    failedTurn('stream disconnected before completion: error sending request for url'),
    { status: 'blocked', raw: 'unreachable' },
  ],
  [
    'turn.failed (model error, HTTP 500)',
    failedTurn('We’re currently experiencing high demand, which may cause temporary errors.'),
    { status: 'failed', raw: 'turn.failed' },
  ],
  [
    'turn.failed (response.failed)',
    failedTurn('stream disconnected before completion: the model broke'),
    { status: 'failed', raw: 'turn.failed' },
  ],
  [
    'killed by a signal',
    { exitCode: null, signal: 'SIGKILL', turnCompleted: false, exitMessage: 'killed by SIGKILL' },
    { status: 'failed', raw: 'signal:SIGKILL' },
  ],
  [
    'crash, non-zero exit',
    {
      exitCode: 101,
      turnCompleted: false,
      lastMessagePresent: false,
      stderrTail: "thread 'main' panicked",
      exitMessage: "exited with code 101: thread 'main' panicked",
    },
    { status: 'failed', raw: 'exit:101' },
  ],
  ['exit 0, no turn.completed, -o file written', { turnCompleted: false }, { status: 'completed', raw: 'exit:0' }],
  [
    'exit 0, no turn.completed, no -o file',
    { turnCompleted: false, lastMessagePresent: false },
    { status: 'failed', raw: 'exit:0:no_turn' },
  ],
];

describe('classifyCodex', () => {
  it.each(rows)('%s', (_name, facts, expected) => {
    const outcome = classifyCodex({ ...ok, ...facts });
    expect(outcome.status).toBe(expected.status);
    expect(outcome.raw).toBe(expected.raw);
    expect(outcome.timed_out).toBe(expected.timed_out ?? false);
    if (expected.retry !== undefined) expect(outcome.retry_after_ms).toBe(expected.retry);
    if (outcome.status === 'blocked') expect(outcome.hint).toBeTruthy();
    expect(outcome.message.length).toBeGreaterThan(0);
  });

  it('prefers cancel over an auth error seen before the cancel', () => {
    expect(
      classifyCodex({ ...ok, ...failedTurn('401 Unauthorized'), abort: { kind: 'cancel', message: 'stop' } }).status,
    ).toBe('cancelled');
  });
});

describe('parseRetryAfterMs on codex messages', () => {
  it.each([
    ['Please try again in 20s.', 20_000],
    ['try again in 1.5 seconds', 1500],
    ['try again in 2 hours', 7_200_000],
    ['try again at 5:30 PM', undefined],
  ])('%s', (text, ms) => expect(parseRetryAfterMs(text)).toBe(ms));
});
