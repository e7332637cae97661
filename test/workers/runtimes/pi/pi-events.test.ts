import { describe, expect, it } from 'vitest';
import { PiLineSchema } from '../../../../src/workers/runtimes/pi/pi-protocol.js';
import { newPiRunState, translatePiEvent } from '../../../../src/workers/runtimes/pi/pi-events.js';
import { piAdapter } from '../../../../src/workers/runtimes/pi/pi-adapter.js';
import type { RuntimeEventV1 } from '../../../../src/shared/runtime/v1/index.js';

const usage = (input: number, output: number, cost = 0) => ({
  input,
  output,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: input + output,
  cost: { total: cost },
});

function feed(lines: unknown[]) {
  const state = newPiRunState();
  const events: RuntimeEventV1[] = [];
  for (const line of lines) events.push(...translatePiEvent(state, PiLineSchema.parse(line), 7));
  return { state, events };
}

describe('pi JSON-mode translation', () => {
  it('maps the header, assistant messages, tools and usage; the last assistant text is the final text', () => {
    const { state, events } = feed([
      { type: 'session', version: 3, id: 'sess-1', cwd: '/w' },
      { type: 'agent_start' },
      { type: 'message_end', message: { role: 'user', content: [{ type: 'text', text: 'do it' }] } },
      { type: 'message_update', assistantMessageEvent: { type: 'text_delta', delta: 'x', partial: { huge: true } } },
      {
        type: 'message_end',
        message: {
          role: 'assistant',
          content: [{ type: 'toolCall', id: 'c1', name: 'write', arguments: {} }],
          usage: usage(100, 10),
          stopReason: 'toolUse',
        },
      },
      {
        type: 'tool_execution_start',
        toolCallId: 'c1',
        toolName: 'write',
        args: { path: 'a', content: 'y'.repeat(5000) },
      },
      {
        type: 'tool_execution_end',
        toolCallId: 'c1',
        toolName: 'write',
        result: { content: [{ type: 'text', text: 'ok' }] },
        isError: false,
      },
      {
        type: 'message_end',
        message: {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm' },
            { type: 'text', text: 'Part 1. ' },
            { type: 'text', text: 'Part 2.' },
          ],
          usage: usage(200, 20, 0.5),
          stopReason: 'stop',
        },
      },
      { type: 'agent_end', messages: [{ role: 'assistant', content: [{ type: 'text', text: 'from agent_end' }] }] },
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'runtime.started',
      'runtime.usage',
      'runtime.tool_call',
      'runtime.tool_call',
      'runtime.thought',
      'runtime.message',
      'runtime.usage',
    ]);
    expect(events[0]).toEqual({ type: 'runtime.started', data: { session_id: 'sess-1', pid: 7, cwd: '/w' } });
    expect(state.lastAssistantText).toBe('Part 1. Part 2.');
    expect(state.agentEndText).toBe('from agent_end');
    expect(state.usage).toEqual({ input_tokens: 300, output_tokens: 30, total_tokens: 330, cost_usd: 0.5 });
    // A 5 000-char file body is not copied into the event.
    expect(JSON.stringify(events[2]).length).toBeLessThan(1000);
    expect(state.sessionId).toBe('sess-1');
  });

  it('remembers a provider error stop and reports an unknown event type once', () => {
    const { state, events } = feed([
      {
        type: 'message_end',
        message: { role: 'assistant', content: [], stopReason: 'error', errorMessage: '401 nope' },
      },
      { type: 'notice', text: 'omp only' },
      { type: 'notice', text: 'again' },
    ]);
    expect(state.lastStopReason).toBe('error');
    expect(state.lastErrorMessage).toBe('401 nope');
    expect(events.filter((e) => e.type === 'runtime.raw')).toHaveLength(1);
  });

  it('rejects a known event type with the wrong shape (→ runtime.raw, never a crash)', () => {
    expect(PiLineSchema.safeParse({ type: 'message_end' }).success).toBe(false);
    expect(PiLineSchema.safeParse({ type: 'tool_execution_start', toolName: 'x' }).success).toBe(false);
  });

  it('treats an --api-key passed through extra_args as a secret', () => {
    const config = piAdapter.configSchema.parse({
      extra_args: ['--api-key', 'sk-extra-arg-secret'],
      env: { OPENAI_API_KEY: 'sk-env' },
    });
    expect(piAdapter.secretsOf(config)).toEqual(['sk-env', 'sk-extra-arg-secret']);
  });

  it('redacts secrets in the dry-run description', async () => {
    const config = piAdapter.configSchema.parse({ extra_args: ['--api-key', 'sk-extra-arg-secret'] });
    const plan = await piAdapter.prepare({
      config,
      prompt: 'p',
      workDir: '/tmp',
      mission: { missionId: 'm', operationId: 'o' },
    });
    expect(JSON.stringify(plan.describe)).not.toContain('sk-extra-arg-secret');
    expect(plan.describe.argv).toContain('[redacted]');
  });
});
