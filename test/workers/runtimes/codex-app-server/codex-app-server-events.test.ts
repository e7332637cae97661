import { describe, expect, it } from 'vitest';
import {
  initialTurnState,
  translateAppServerNotification,
} from '../../../../src/workers/runtimes/codex-app-server/codex-app-server-events.js';

const T = 'turn-1';
const usage = (n: number) => ({
  totalTokens: n * 2,
  inputTokens: n,
  cachedInputTokens: 1,
  cacheWriteInputTokens: 0,
  outputTokens: n,
  reasoningOutputTokens: 2,
});

describe('translateAppServerNotification', () => {
  it.each([
    [
      'agent message delta',
      'item/agentMessage/delta',
      { threadId: 'th', turnId: T, itemId: 'i1', delta: 'Hel' },
      [{ type: 'runtime.message', data: { text: 'Hel', delta: true } }],
    ],
    [
      'reasoning summary delta',
      'item/reasoning/summaryTextDelta',
      { threadId: 'th', turnId: T, itemId: 'r1', delta: 'think', summaryIndex: 0 },
      [{ type: 'runtime.thought', data: { text: 'think' } }],
    ],
    [
      'reasoning text delta',
      'item/reasoning/textDelta',
      { threadId: 'th', turnId: T, itemId: 'r1', delta: 'raw', contentIndex: 0 },
      [{ type: 'runtime.thought', data: { text: 'raw' } }],
    ],
    [
      'agent message completed (no deltas)',
      'item/completed',
      { threadId: 'th', turnId: T, item: { type: 'agentMessage', id: 'm1', text: 'Done.' } },
      [{ type: 'runtime.message', data: { text: 'Done.', role: 'assistant' } }],
    ],
    [
      'reasoning completed',
      'item/completed',
      { threadId: 'th', turnId: T, item: { type: 'reasoning', id: 'r2', summary: ['a', 'b'], content: [] } },
      [{ type: 'runtime.thought', data: { text: 'a\nb' } }],
    ],
    [
      'command started',
      'item/started',
      { threadId: 'th', turnId: T, item: { type: 'commandExecution', id: 'c1', command: 'ls', status: 'inProgress' } },
      [{ type: 'runtime.tool_call', data: { id: 'c1', name: 'command', status: 'started', command: 'ls' } }],
    ],
    [
      'command completed',
      'item/completed',
      {
        threadId: 'th',
        turnId: T,
        item: { type: 'commandExecution', id: 'c1', command: 'ls', status: 'completed', exitCode: 0 },
      },
      [{ type: 'runtime.tool_call', data: { id: 'c1', name: 'command', status: 'completed', exit_code: 0 } }],
    ],
    [
      'file change completed',
      'item/completed',
      {
        threadId: 'th',
        turnId: T,
        item: { type: 'fileChange', id: 'f1', status: 'completed', changes: [{ path: 'a.txt' }] },
      },
      [{ type: 'runtime.tool_call', data: { name: 'file_change', paths: ['a.txt'] } }],
    ],
    [
      'mcp tool call started',
      'item/started',
      { threadId: 'th', turnId: T, item: { type: 'mcpToolCall', id: 'x1', status: 'inProgress' } },
      [{ type: 'runtime.tool_call', data: { name: 'mcp', status: 'started' } }],
    ],
    [
      'user message item: nothing',
      'item/completed',
      { threadId: 'th', turnId: T, item: { type: 'userMessage', id: 'u1', clientId: 'c', content: [] } },
      [],
    ],
    [
      'plan updated',
      'turn/plan/updated',
      { threadId: 'th', turnId: T, explanation: null, plan: [{ step: 'a', status: 'pending' }] },
      [{ type: 'runtime.plan', data: { plan: [{ step: 'a', status: 'pending' }] } }],
    ],
    [
      'diff updated: size only',
      'turn/diff/updated',
      { threadId: 'th', turnId: T, diff: 'diff --git a b\n' },
      [{ type: 'runtime.log', data: { level: 'debug', diff_bytes: 15 } }],
    ],
    [
      'error, will retry',
      'error',
      {
        threadId: 'th',
        turnId: T,
        willRetry: true,
        error: { message: 'reconnecting', codexErrorInfo: 'serverOverloaded' },
      },
      [{ type: 'runtime.log', data: { level: 'warn', will_retry: true, codex_error_info: 'serverOverloaded' } }],
    ],
    [
      'error, final',
      'error',
      { threadId: 'th', turnId: T, willRetry: false, error: { message: 'boom', codexErrorInfo: 'other' } },
      [{ type: 'runtime.log', data: { level: 'error', will_retry: false } }],
    ],
    [
      'another turn: dropped',
      'item/agentMessage/delta',
      { threadId: 'th', turnId: 'turn-0', itemId: 'i1', delta: 'old' },
      [],
    ],
    ['unknown method: nothing', 'thread/name/updated', { threadId: 'th', name: 'x' }, []],
    [
      'malformed: raw',
      'item/completed',
      { threadId: 'th', turnId: T },
      [{ type: 'runtime.raw', data: { source: 'codex-app-server' } }],
    ],
  ] as const)('%s', (_name, method, params, expected) => {
    const state = initialTurnState();
    state.turnId = T;
    const events = translateAppServerNotification(method, params, state);
    expect(events).toHaveLength(expected.length);
    expected.forEach((e, i) => expect(events[i]).toMatchObject(e));
  });

  it('does not repeat a message the deltas already streamed, but repeats a corrected one', () => {
    const state = initialTurnState();
    state.turnId = T;
    translateAppServerNotification(
      'item/agentMessage/delta',
      { threadId: 'th', turnId: T, itemId: 'm1', delta: 'Hi' },
      state,
    );
    expect(
      translateAppServerNotification(
        'item/completed',
        { threadId: 'th', turnId: T, item: { type: 'agentMessage', id: 'm1', text: 'Hi' } },
        state,
      ),
    ).toEqual([]);
    expect(
      translateAppServerNotification(
        'item/completed',
        { threadId: 'th', turnId: T, item: { type: 'agentMessage', id: 'm1', text: 'Hi!' } },
        state,
      ),
    ).toHaveLength(1);
  });

  it('sums `last` token usage of its own turn into a cumulative runtime.usage', () => {
    const state = initialTurnState();
    state.turnId = T;
    translateAppServerNotification(
      'thread/tokenUsage/updated',
      { threadId: 'th', turnId: T, tokenUsage: { total: usage(10), last: usage(10) } },
      state,
    );
    const [event] = translateAppServerNotification(
      'thread/tokenUsage/updated',
      { threadId: 'th', turnId: T, tokenUsage: { total: usage(30), last: usage(20) } },
      state,
    );
    expect(event).toEqual({
      type: 'runtime.usage',
      data: {
        input_tokens: 30,
        cached_input_tokens: 2,
        output_tokens: 30,
        reasoning_tokens: 4,
        total_tokens: 60,
        cumulative: true,
      },
    });
    // An earlier turn's usage (a resumed thread) is not ours.
    expect(
      translateAppServerNotification(
        'thread/tokenUsage/updated',
        { threadId: 'th', turnId: 'turn-0', tokenUsage: { total: usage(5), last: usage(5) } },
        state,
      ),
    ).toEqual([]);
  });
});
