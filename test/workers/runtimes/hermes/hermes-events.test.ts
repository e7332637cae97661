import { describe, expect, it } from 'vitest';
import { HermesLineSchema, sessionIdFromStderr } from '../../../../src/workers/runtimes/hermes/hermes-protocol.js';
import {
  flushHermesText,
  newHermesRunState,
  translateHermesEvent,
} from '../../../../src/workers/runtimes/hermes/hermes-events.js';
import { parseHermesHelp } from '../../../../src/workers/runtimes/hermes/hermes-argv.js';
import type { RuntimeEventV1 } from '../../../../src/shared/runtime/v1/index.js';

function feed(lines: unknown[]): { events: RuntimeEventV1[]; state: ReturnType<typeof newHermesRunState> } {
  const state = newHermesRunState();
  const events: RuntimeEventV1[] = [];
  for (const line of lines) events.push(...translateHermesEvent(state, HermesLineSchema.parse(line), 42));
  events.push(...flushHermesText(state));
  return { events, state };
}

describe('hermes stream-json translation', () => {
  it('maps init, text deltas, tool use/result and the result record', () => {
    const { events, state } = feed([
      { type: 'system', subtype: 'init', model: 'm', session_id: 's1' },
      { type: 'text', text: 'Let me ' },
      { type: 'text', text: 'look.' },
      { type: 'tool_use', name: 'read_file', input: { path: 'a' } },
      { type: 'tool_use', name: 'read_file', input: { path: 'b' } },
      { type: 'tool_result', name: 'read_file', output: 'A', is_error: false },
      { type: 'tool_result', name: 'read_file', output: 'B', is_error: true },
      { type: 'text', text: 'Done.' },
      {
        type: 'result',
        session_id: 's1',
        exit_code: 0,
        text: 'Done.',
        tokens: { input: 10, output: 5, total: 15, cache_read: 3 },
      },
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'runtime.started',
      'runtime.message',
      'runtime.tool_call',
      'runtime.tool_call',
      'runtime.tool_call',
      'runtime.tool_call',
      'runtime.message',
      'runtime.usage',
    ]);
    expect(events[0]).toEqual({ type: 'runtime.started', data: { session_id: 's1', model: 'm', pid: 42 } });
    expect(events[1]).toMatchObject({ data: { text: 'Let me look.' } });
    // Calls without ids are paired in order per tool name.
    const tools = events.filter((e) => e.type === 'runtime.tool_call').map((e) => [e.data.id, e.data.status]);
    expect(tools).toEqual([
      ['hermes-tool-1', 'started'],
      ['hermes-tool-2', 'started'],
      ['hermes-tool-1', 'completed'],
      ['hermes-tool-2', 'failed'],
    ]);
    expect(events.at(-1)).toEqual({
      type: 'runtime.usage',
      data: { input_tokens: 10, output_tokens: 5, total_tokens: 15, cached_input_tokens: 3, cumulative: true },
    });
    expect(state.result?.exit_code).toBe(0);
  });

  it('keeps an unknown event type by name and rejects a known type with a bad shape', () => {
    expect(HermesLineSchema.parse({ type: 'thinking', text: 'x' })).toEqual({ type: 'unknown', raw_type: 'thinking' });
    expect(HermesLineSchema.safeParse({ type: 'result' }).success).toBe(false);
  });

  it('reads the session id Hermes prints on stderr and the features in chat --help', () => {
    expect(sessionIdFromStderr('warming up\n\nsession_id: 20261130_1\n')).toBe('20261130_1');
    expect(sessionIdFromStderr('no id here')).toBeNull();
    expect(parseHermesHelp('  --format {text,stream-json}\n  --query-file PATH')).toEqual({
      streamJson: true,
      queryFile: true,
    });
    expect(parseHermesHelp('  -q QUERY')).toEqual({ streamJson: false, queryFile: false });
  });
});
