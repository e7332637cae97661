/**
 * The codex line schemas dispatch on `type` (a discriminated union, one option tried): they must
 * accept, transform and refuse exactly what the plain unions of the same member schemas do.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as P from '../../../../src/workers/runtimes/codex/codex-protocol.js';

const item = (phase: string, body: Record<string, unknown>) => ({ type: phase, item: { id: 'item_1', ...body } });
const PlainItem = z.union([
  P.AgentMessageItem,
  P.ReasoningItem,
  P.PlanItem,
  P.CommandExecutionItem,
  P.FileChangeItem,
  P.McpToolCallItem,
  P.WebSearchItem,
  P.TodoListItem,
  P.ErrorItem,
  P.UnknownItem,
]);
const PlainEvent = z.union([
  P.ThreadStarted,
  P.TurnStarted,
  P.TurnCompleted,
  P.TurnFailed,
  z.looseObject({ type: z.enum(['item.started', 'item.updated', 'item.completed']), item: PlainItem }),
  P.StreamError,
  P.UnknownEvent,
]);

const lines: unknown[] = [
  { type: 'thread.started', thread_id: 't-1' },
  { type: 'thread.started', thread_id: '' },
  { type: 'turn.started' },
  { type: 'turn.completed', usage: { input_tokens: 3, cached_input_tokens: 1, output_tokens: 2 } },
  { type: 'turn.completed', usage: { input_tokens: -1, output_tokens: 2 } },
  { type: 'turn.completed' },
  { type: 'turn.failed', error: { message: 'boom' } },
  { type: 'turn.failed', error: 'boom' },
  { type: 'error', message: 'reconnecting' },
  { type: 'error' },
  { type: 'session.configured', model: 'x' },
  { type: 42 },
  {},
  null,
  'text',
  item('item.completed', { type: 'agent_message', text: 'hi' }),
  item('item.updated', { type: 'agent_message' }),
  item('item.started', {
    type: 'command_execution',
    command: 'ls',
    aggregated_output: '',
    exit_code: null,
    status: 'in_progress',
  }),
  item('item.completed', { type: 'file_change', changes: [{ path: 'a', kind: 'add' }], status: 'completed' }),
  item('item.completed', { type: 'file_change', changes: 'a' }),
  item('item.completed', {
    type: 'mcp_tool_call',
    server: 's',
    tool: 't',
    arguments: {},
    status: 'failed',
    error: { message: 'x' },
  }),
  item('item.completed', { type: 'web_search', query: 'q' }),
  item('item.updated', { type: 'todo_list', items: [{ text: 'a', completed: false }] }),
  item('item.completed', { type: 'plan', text: 'p' }),
  item('item.completed', { type: 'reasoning', text: 'r' }),
  item('item.completed', { type: 'error', message: 'm' }),
  item('item.completed', { type: 'image_view', path: 'x.png' }),
  item('item.completed', { text: 'no type' }),
  { type: 'item.removed', item: { id: 'i', type: 'agent_message', text: 'x' } },
  { type: 'item.completed' },
];

describe('codex line schemas', () => {
  it('parse every line as the plain unions of their members do: same data, same refusals', () => {
    for (const line of lines) {
      const fast = P.CodexEventSchema.safeParse(line);
      const plain = PlainEvent.safeParse(line);
      expect({ line, ok: fast.success, data: fast.data }).toEqual({ line, ok: plain.success, data: plain.data });
    }
  });
});
