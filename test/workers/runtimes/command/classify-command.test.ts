import { describe, expect, it } from 'vitest';
import { classifyCommand, type CommandExit } from '../../../../src/workers/runtimes/command/classify-command.js';

const exit = (patch: Partial<CommandExit>): CommandExit => ({
  exitCode: 0,
  signal: null,
  timedOut: false,
  abort: null,
  program: 'agent',
  ...patch,
});

describe('classifyCommand (priority: spawn error → timeout → cancel → 127 → signal → exit code)', () => {
  it.each<[string, Partial<CommandExit>, string, string, boolean]>([
    ['exit 0', {}, 'completed', 'exit:0', false],
    ['exit 1', { exitCode: 1 }, 'failed', 'exit:1', false],
    [
      'missing program',
      { exitCode: null, spawnError: { code: 'ENOENT', message: 'spawn agent ENOENT' } },
      'blocked',
      'spawn:ENOENT',
      false,
    ],
    [
      'not executable',
      { exitCode: null, spawnError: { code: 'EACCES', message: 'EACCES' } },
      'blocked',
      'spawn:EACCES',
      false,
    ],
    ['exit 127 from a shell', { exitCode: 127 }, 'blocked', 'exit:127', false],
    ['own timeout', { exitCode: null, signal: 'SIGTERM', timedOut: true }, 'failed', 'timeout', true],
    [
      'mission timeout abort',
      { exitCode: null, signal: 'SIGTERM', abort: { kind: 'timeout', message: 't', timeoutMs: 1 } },
      'failed',
      'timeout',
      true,
    ],
    [
      'cancel beats the signal it caused',
      { exitCode: null, signal: 'SIGTERM', abort: { kind: 'cancel', message: 'stop' } },
      'cancelled',
      'cancel',
      false,
    ],
    ['killed by a signal', { exitCode: null, signal: 'SIGKILL' }, 'failed', 'signal:SIGKILL', false],
  ])('%s', (_name, patch, status, raw, timedOut) => {
    const outcome = classifyCommand(exit(patch));
    expect(outcome.status).toBe(status);
    expect(outcome.raw).toBe(raw);
    expect(outcome.timed_out).toBe(timedOut);
    if (status === 'blocked') expect(outcome.hint).toBeTruthy();
  });
});
