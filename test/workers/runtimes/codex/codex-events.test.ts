import { describe, expect, it } from 'vitest';
import { CodexEventSchema } from '../../../../src/workers/runtimes/codex/codex-protocol.js';
import { initialCodexState, translateCodexEvent } from '../../../../src/workers/runtimes/codex/codex-events.js';

const item = (phase: string, body: Record<string, unknown>) => ({ type: phase, item: { id: 'item_1', ...body } });

// One row per row of the events table in docs/runtimes/codex.md: native line → shared event types.
const rows: Array<[string, Record<string, unknown>, string[]]> = [
  ['thread.started', { type: 'thread.started', thread_id: 't-1' }, ['runtime.started']],
  ['turn.started', { type: 'turn.started' }, ['runtime.log']],
  ['agent_message completed', item('item.completed', { type: 'agent_message', text: 'hi' }), ['runtime.message']],
  ['agent_message updated (partial)', item('item.updated', { type: 'agent_message', text: 'h' }), []],
  ['reasoning', item('item.completed', { type: 'reasoning', text: 'think' }), ['runtime.thought']],
  [
    'command_execution started',
    item('item.started', {
      type: 'command_execution',
      command: 'ls',
      aggregated_output: '',
      exit_code: null,
      status: 'in_progress',
    }),
    ['runtime.tool_call'],
  ],
  [
    'command_execution updated',
    item('item.updated', { type: 'command_execution', command: 'ls', status: 'in_progress' }),
    [],
  ],
  [
    'file_change',
    item('item.completed', { type: 'file_change', changes: [{ path: 'a', kind: 'add' }], status: 'completed' }),
    ['runtime.tool_call'],
  ],
  [
    'mcp_tool_call',
    item('item.completed', {
      type: 'mcp_tool_call',
      server: 's',
      tool: 't',
      arguments: {},
      status: 'failed',
      error: { message: 'x' },
    }),
    ['runtime.tool_call'],
  ],
  ['web_search', item('item.completed', { type: 'web_search', query: 'q' }), ['runtime.tool_call']],
  [
    'todo_list',
    item('item.updated', { type: 'todo_list', items: [{ text: 'a', completed: false }] }),
    ['runtime.plan'],
  ],
  ['plan', item('item.completed', { type: 'plan', text: 'p' }), ['runtime.plan']],
  [
    'error item (non-fatal)',
    item('item.completed', { type: 'error', message: 'Model metadata not found' }),
    ['runtime.log'],
  ],
  [
    'turn.completed',
    {
      type: 'turn.completed',
      usage: { input_tokens: 10, cached_input_tokens: 2, output_tokens: 5, reasoning_output_tokens: 1 },
    },
    ['runtime.usage'],
  ],
  ['turn.failed', { type: 'turn.failed', error: { message: 'boom' } }, ['runtime.log']],
  ['top-level error', { type: 'error', message: 'Reconnecting... 1/5' }, ['runtime.log']],
  ['unknown event type', { type: 'session.configured', model: 'x' }, ['runtime.raw']],
  ['unknown item type', item('item.completed', { type: 'collab_tool_call' }), ['runtime.raw']],
];

describe('translateCodexEvent', () => {
  it.each(rows)('%s', (_name, line, types) => {
    const parsed = CodexEventSchema.parse(line);
    expect(translateCodexEvent(parsed, initialCodexState(42)).map((e) => e.type)).toEqual(types);
  });

  it('keeps the facts the classifier needs', () => {
    const state = initialCodexState(7);
    const feed = (line: unknown) => translateCodexEvent(CodexEventSchema.parse(line), state);
    expect(feed({ type: 'thread.started', thread_id: 't-9' })[0]).toEqual({
      type: 'runtime.started',
      data: { thread_id: 't-9', session_id: 't-9', pid: 7 },
    });
    feed(item('item.completed', { type: 'error', message: 'non-fatal' }));
    feed({
      type: 'turn.completed',
      usage: { input_tokens: 10, cached_input_tokens: 2, output_tokens: 5, reasoning_output_tokens: 1 },
    });
    feed({ type: 'turn.completed', usage: { input_tokens: 1, output_tokens: 1 } });
    expect(state).toMatchObject({ threadId: 't-9', turnCompleted: true, turnFailed: null, lastError: null });
    expect(state.usage).toEqual({
      input_tokens: 11,
      cached_input_tokens: 2,
      output_tokens: 6,
      reasoning_tokens: 1,
      total_tokens: 17,
    });
    feed({ type: 'turn.failed', error: { message: 'boom' } });
    expect(state.turnFailed).toBe('boom');
  });

  it('rejects a known type with a wrong shape (a malformed line, not an unknown one)', () => {
    expect(CodexEventSchema.safeParse({ type: 'thread.started' }).success).toBe(false);
    expect(
      CodexEventSchema.safeParse({ type: 'turn.completed', usage: { input_tokens: -1, output_tokens: 0 } }).success,
    ).toBe(false);
  });
});
