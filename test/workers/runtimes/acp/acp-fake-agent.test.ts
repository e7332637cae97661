import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acpAdapter } from '../../../../src/workers/runtimes/acp/acp-adapter.js';
import { foldRuntimeEvents } from '../../../../src/shared/runtime/fold-events.js';
import type { RuntimeSessionV1 } from '../../../../src/shared/runtime/v1/index.js';
import { runAdapter, terminalOf } from '../../../support/run-adapter.js';
import { assistantText, fakeCommand, newJournal, ofType, readJournal, requestsOf } from './fake-acp.js';

const run = (scenario: string, extra: Record<string, unknown> = {}, options: Parameters<typeof runAdapter>[2] = {}) => {
  const journal = newJournal();
  return runAdapter(
    acpAdapter,
    { command: fakeCommand(scenario), env: { FAKE_ACP_JOURNAL: journal }, ...extra },
    options,
  ).then((r) => ({
    ...r,
    journal: readJournal(journal),
    terminal: terminalOf(r.events),
  }));
};

describe('acp runtime against the scripted fake agent', () => {
  it('runs the lifecycle with the exact wire: initialize v1 with fs/terminal off, session/new with no MCP servers, a text prompt', async () => {
    const r = await run('ok');
    const [init] = requestsOf(r.journal, 'initialize');
    expect(init?.jsonrpc).toBe('2.0');
    expect(init?.params).toMatchObject({
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    expect(requestsOf(r.journal, 'session/new')[0]?.params).toEqual({ cwd: r.workDir, mcpServers: [] });
    const [prompt] = requestsOf(r.journal, 'session/prompt');
    expect(prompt?.params.prompt).toEqual([{ type: 'text', text: 'Say hello.' }]);
    // on_demand auth (the generic default): no authenticate when session/new does not ask for it.
    expect(requestsOf(r.journal, 'authenticate')).toEqual([]);
    expect(r.terminal.outcome).toMatchObject({ status: 'completed', raw: 'stop:end_turn' });
    expect(r.terminal.session_id).toBe(prompt?.params.sessionId);
    expect(ofType(r.events, 'runtime.started')[0]?.data).toMatchObject({
      session_id: prompt?.params.sessionId,
      protocol_version: 1,
      load_session: true,
    });
    // The agent session id is in the operation's durable journal before the prompt is sent.
    expect(JSON.parse(readFileSync(join(r.logDir, 'runtime-journal.json'), 'utf8'))).toMatchObject({
      acp_session_id: prompt?.params.sessionId,
      acp_agent: 'hermes-agent',
    });
  });

  it('edits a file in its work dir after the sandbox policy allows it, and reports chunks, thoughts, tools, plan and usage', async () => {
    const r = await run('ok');
    expect(readFileSync(join(r.workDir, 'hello.txt'), 'utf8')).toBe('hi from hermes\n');
    expect(assistantText(r.events)).toContain('I will edit hello.txt. Done: wrote hello.txt.');
    expect(ofType(r.events, 'runtime.thought').map((e) => e.data.text)).toEqual(['Plan: read, then edit.']);
    // Hermes' tool_call carries no status (tools.py build_tool_start), only its update does.
    expect(
      ofType(r.events, 'runtime.tool_call').map((e) => `${e.data.id}:${e.data.kind}:${e.data.status ?? '-'}`),
    ).toEqual([
      'tc-3f2a9c1b7d04:read:-',
      'tc-3f2a9c1b7d04:read:completed',
      'tc-8e6b0d2f41a9:edit:-',
      'tc-8e6b0d2f41a9:edit:completed',
    ]);
    expect(ofType(r.events, 'runtime.tool_call')[2]?.data).toMatchObject({
      title: `write: ${join(r.workDir, 'hello.txt')}`,
      paths: [join(r.workDir, 'hello.txt')],
    });
    expect(ofType(r.events, 'runtime.plan')).toHaveLength(0);
    expect(r.terminal.final_message).toBe('Wrote hello.txt with a greeting.');
    expect(r.terminal.final_message_source).toBe('sentinel');
    expect(r.terminal.usage).toEqual({ input_tokens: 100, output_tokens: 20, total_tokens: 120, reasoning_tokens: 5 });
    const folded = foldRuntimeEvents(r.events);
    expect(folded.tool_calls).toBe(2);
    expect(folded.usage.total_tokens).toBe(120);
    // Commands and usage_update sent right after the session/new reply are not lost.
    expect(ofType(r.events, 'runtime.raw').map((e) => e.data.kind)).toEqual([
      'available_commands_update',
      'usage_update',
      'usage_update',
    ]);
  });

  it('answers a permission with exactly {outcome:{outcome:"selected", optionId:"allow_once"}} and audits it', async () => {
    const r = await run('ok');
    const answer = r.journal.find((m) => m.id === 'srv-1' && !('method' in m));
    expect(answer).toEqual({
      jsonrpc: '2.0',
      id: 'srv-1',
      result: { outcome: { outcome: 'selected', optionId: 'allow_once' } },
    });
    expect(r.journal.find((m) => m.permission_result)).toMatchObject({ permission_result: 'once' });
    const [audit] = ofType(r.events, 'runtime.permission');
    expect(audit?.data).toMatchObject({
      request: { tool_call_id: 'edit-approval-1', kind: 'edit', paths: [join(r.workDir, 'hello.txt')] },
      answer: { outcome: { outcome: 'selected', optionId: 'allow_once' } },
      allowed: true,
      policy: 'sandbox',
    });
  });

  it.each([
    ['an edit outside the work dir', 'outside'],
    ['a dangerous command', 'execute'],
  ])('denies %s under the sandbox policy by selecting the reject option', async (_name, scenario) => {
    const r = await run(scenario);
    expect(r.journal.find((m) => m.permission_result)).toMatchObject({
      permission_result: 'deny',
      why: 'selected deny',
    });
    expect(ofType(r.events, 'runtime.permission')[0]?.data).toMatchObject({
      allowed: false,
      answer: { outcome: { outcome: 'selected', optionId: 'deny' } },
    });
    expect(r.terminal.final_message).toBe('permission was denied');
    expect(existsSync(join(r.workDir, '..', 'outside.txt'))).toBe(false);
  });

  it('denies everything under the deny policy: the file is not written', async () => {
    const r = await run('ok', { permission_policy: 'deny' });
    expect(existsSync(join(r.workDir, 'hello.txt'))).toBe(false);
    expect(r.terminal.final_message).toBe('Could not edit hello.txt: permission denied.');
    expect(r.terminal.outcome.status).toBe('completed');
  });

  it('asks through send under the ask policy: a pending audit event, then the answer', async () => {
    let session: RuntimeSessionV1 | undefined;
    const r = await run(
      'ok',
      { permission_policy: 'ask' },
      {
        onSession: (s) => (session = s),
        onEvent: (event) => {
          if (event.type === 'runtime.permission' && event.data.pending) void session?.send?.('allow');
        },
      },
    );
    const audits = ofType(r.events, 'runtime.permission');
    expect(audits.map((a) => a.data.answer)).toEqual([
      null,
      { outcome: { outcome: 'selected', optionId: 'allow_once' } },
    ]);
    expect(audits[1]?.data.decided_by).toBe('send');
    expect(ofType(r.events, 'runtime.steering').map((e) => e.data.message)).toEqual(['allow']);
    expect(readFileSync(join(r.workDir, 'hello.txt'), 'utf8')).toBe('hi from hermes\n');
    expect(requestsOf(r.journal, 'session/prompt')).toHaveLength(1); // the answer was not taken as a follow-up prompt
  });

  it('denies under the ask policy when nobody answers in time', async () => {
    const r = await run('ok', { permission_policy: 'ask', permission_timeout_ms: 200 });
    expect(ofType(r.events, 'runtime.permission')[1]?.data).toMatchObject({ decided_by: 'timeout', allowed: false });
    expect(existsSync(join(r.workDir, 'hello.txt'))).toBe(false);
  });

  it('answers vendor extension and fs/* requests with -32601 and keeps going', async () => {
    const r = await run('vendor');
    expect(assistantText(r.events)).toContain('vendor answered -32601; fs answered -32601.');
    expect(
      ofType(r.events, 'runtime.raw')
        .filter((e) => e.data.source === 'acp.request')
        .map((e) => e.data.method),
    ).toEqual(['_hermes/ping', 'fs/read_text_file']);
    expect(r.terminal.outcome.status).toBe('completed');
  });

  it('reports garbage on stdout as raw events and is not thrown off by it', async () => {
    const r = await run('garbage');
    const stdout = ofType(r.events, 'runtime.raw').filter((e) => e.data.source === 'acp.stdout');
    expect(stdout.map((e) => e.data.line)).toEqual(['Loading hermes plugins...', '{"not":"a message"}']);
    expect(r.terminal.outcome.status).toBe('completed');
  });

  it('keeps unknown update kinds, mode changes and non-text chunks as raw events', async () => {
    const r = await run('updates');
    const raw = ofType(r.events, 'runtime.raw').map((e) => `${e.data.kind}:${e.data.reason ?? ''}`);
    expect(raw).toContain('shiny_new_thing:unknown session update kind');
    expect(raw).toContain('current_mode_update:');
    expect(raw).toContain('agent_message_chunk:non-text content (image)');
    expect(ofType(r.events, 'runtime.plan')).toHaveLength(1);
    expect(r.terminal.outcome.status).toBe('completed');
  });

  it.each([
    ['refuse', 'stop:refusal', 'failed'],
    ['max_tokens', 'stop:max_tokens', 'failed'],
    ['max_turn_requests', 'stop:max_turn_requests', 'failed'],
  ])('classifies stopReason of scenario %s', async (scenario, raw, status) => {
    const r = await run(scenario);
    expect(r.terminal.outcome).toMatchObject({ raw, status });
    expect(r.terminal.final_message_source).toBe('native');
  });
});
