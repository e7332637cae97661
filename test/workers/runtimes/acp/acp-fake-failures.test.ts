import { describe, expect, it } from 'vitest';
import { acpAdapter } from '../../../../src/workers/runtimes/acp/acp-adapter.js';
import { hermesAcpAdapter } from '../../../../src/workers/runtimes/hermes-acp/hermes-acp-adapter.js';
import type { AnyRuntimeAdapter } from '../../../../src/shared/runtime/v1/index.js';
import { runAdapter, terminalOf } from '../../../support/run-adapter.js';
import { abortWhen, fakeCommand, newJournal, ofType, readJournal, requestsOf } from './fake-acp.js';

const cancel = { kind: 'cancel', message: 'cancelled by test' };
const timeout = { kind: 'timeout', message: 'mission timed out after 1 s', timeoutMs: 1000 };
const firstChunk = (e: { type: string }) => e.type === 'runtime.message';

async function run(
  scenario: string,
  extra: Record<string, unknown> = {},
  options: Parameters<typeof runAdapter>[2] = {},
  adapter: AnyRuntimeAdapter = acpAdapter,
) {
  const journal = newJournal();
  const r = await runAdapter(
    adapter,
    { command: fakeCommand(scenario), env: { FAKE_ACP_JOURNAL: journal }, ...extra },
    options,
  );
  return { ...r, journal: readJournal(journal), terminal: terminalOf(r.events) };
}

describe('acp runtime: failures, cancel and auth against the fake agent', () => {
  it('fails with the exit code and the last stderr line when the agent crashes mid-turn, and poisons its child', async () => {
    const r = await run('crash');
    expect(r.terminal.outcome).toMatchObject({ status: 'failed', raw: 'exit:1', exit_code: 1 });
    expect(r.terminal.outcome.message).toContain('RuntimeError: boom');
    expect(r.events.filter((e) => e.type === 'runtime.finished')).toHaveLength(1);
    expect(acpAdapter.pool.size).toBe(0);
  });

  it('is blocked when the agent program is missing', async () => {
    const r = await runAdapter(acpAdapter, { command: ['uh-no-such-acp-agent'] });
    expect(terminalOf(r.events).outcome).toMatchObject({ status: 'blocked', raw: 'spawn:ENOENT' });
    expect(terminalOf(r.events).outcome.hint).toContain('runtime_config.command');
  });

  it('fails with request_timeout when the agent never answers initialize', async () => {
    const r = await run('no-init', { request_timeout_ms: 300 });
    expect(r.terminal.outcome).toMatchObject({ status: 'failed', raw: 'request_timeout:initialize', timed_out: true });
  });

  it('cancels with session/cancel (a notification): the prompt comes back cancelled', async () => {
    const r = await run('hang', {}, abortWhen(firstChunk, cancel));
    expect(r.terminal.outcome).toMatchObject({ status: 'cancelled', raw: 'cancel' });
    const [cancelMsg] = requestsOf(r.journal, 'session/cancel');
    expect(cancelMsg).toEqual({
      jsonrpc: '2.0',
      method: 'session/cancel',
      params: { sessionId: r.terminal.session_id },
    });
    expect(r.terminal.stop_reason).toBe('cancelled');
  });

  it('answers a pending permission request {outcome:{outcome:"cancelled"}} on cancel', async () => {
    const r = await run(
      'hang-permission',
      { permission_policy: 'ask' },
      abortWhen((e) => e.type === 'runtime.permission', cancel),
    );
    const answer = r.journal.find((m) => m.id === 'srv-1' && !('method' in m));
    expect(answer?.result).toEqual({ outcome: { outcome: 'cancelled' } });
    expect(r.journal.find((m) => m.permission_result)).toMatchObject({ permission_result: 'deny', why: 'cancelled' });
    expect(ofType(r.events, 'runtime.permission').map((e) => e.data.decided_by)).toEqual([undefined, 'cancel']);
    expect(r.terminal.outcome.status).toBe('cancelled');
  });

  it('kills an agent that ignores session/cancel after cancel_grace_ms, still cancelled', async () => {
    const started = Date.now();
    const r = await run('hang-hard', { cancel_grace_ms: 300, kill_grace_ms: 300 }, abortWhen(firstChunk, cancel));
    expect(r.terminal.outcome.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(ofType(r.events, 'runtime.log').some((e) => e.data.message.includes('did not answer session/cancel'))).toBe(
      true,
    );
  });

  it('ends failed with timed_out when the mission timeout aborts the turn', async () => {
    const r = await run('hang', {}, abortWhen(firstChunk, timeout));
    expect(r.terminal.outcome).toMatchObject({ status: 'failed', raw: 'timeout', timed_out: true });
  });

  it('ends failed with timed_out at the turn deadline', async () => {
    const r = await run('hang', { turn_timeout_ms: 300 });
    expect(r.terminal.outcome).toMatchObject({ status: 'failed', raw: 'turn_timeout', timed_out: true });
    expect(requestsOf(r.journal, 'session/cancel')).toHaveLength(1);
  });

  it('authenticates on demand with the first non-terminal method when session/new asks for it', async () => {
    const r = await run('auth-required');
    expect(requestsOf(r.journal, 'authenticate').map((m) => m.params)).toEqual([{ methodId: 'openrouter' }]);
    expect(requestsOf(r.journal, 'session/new')).toHaveLength(2);
    expect(r.terminal.outcome.status).toBe('completed');
  });

  it('is blocked, never choosing the terminal method, when that is all the agent offers', async () => {
    const r = await run('auth-terminal-only');
    expect(requestsOf(r.journal, 'authenticate')).toEqual([]);
    expect(r.terminal.outcome).toMatchObject({ status: 'blocked', raw: 'auth_required' });
    expect(r.terminal.outcome.message).toContain('hermes-setup (terminal)');
  });

  it('accepts a null authenticate result, then is blocked when the agent still wants auth', async () => {
    const r = await run('auth-null');
    expect(requestsOf(r.journal, 'authenticate')).toHaveLength(1);
    expect(ofType(r.events, 'runtime.log').some((e) => e.data.message.includes('not accepted (null result)'))).toBe(
      true,
    );
    expect(r.terminal.outcome).toMatchObject({ status: 'blocked', raw: 'auth_required' });
  });

  it('hermes-acp authenticates up front, right after initialize, with the provider method', async () => {
    const r = await run('ok', {}, {}, hermesAcpAdapter);
    const methods = r.journal.filter((m) => 'method' in m && 'id' in m).map((m) => m.method);
    expect(methods.slice(0, 3)).toEqual(['initialize', 'authenticate', 'session/new']);
    expect(requestsOf(r.journal, 'authenticate')[0]?.params).toEqual({ methodId: 'openrouter' });
    expect(r.terminal.outcome.status).toBe('completed');
  });
});
