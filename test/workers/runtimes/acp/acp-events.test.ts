import { describe, expect, it } from 'vitest';
import {
  endTurn,
  mergeToolCall,
  newTranscriptState,
  translateSessionUpdate,
} from '../../../../src/workers/runtimes/acp/acp-events.js';
import { foldRuntimeEvents } from '../../../../src/shared/runtime/fold-events.js';

const text = (sessionUpdate: string, t: string) => ({ sessionUpdate, content: { type: 'text', text: t } });

describe('translateSessionUpdate', () => {
  it('treats message chunks as ADDITIVE: each event carries its piece, the total grows', () => {
    const state = newTranscriptState();
    const events = [
      text('agent_message_chunk', 'Hel'),
      text('agent_message_chunk', 'lo, '),
      text('agent_message_chunk', 'world'),
    ].flatMap((u) => translateSessionUpdate(u, state, false));
    expect(events.map((e) => e.data)).toEqual([
      { text: 'Hel', role: 'assistant', total_chars: 3 },
      { text: 'lo, ', role: 'assistant', total_chars: 7 },
      { text: 'world', role: 'assistant', total_chars: 12 },
    ]);
    expect(state.assistantText).toBe('Hello, world');
    expect(foldRuntimeEvents(events).assistant_text).toBe('Hello, world');
  });

  it.each<[string, object, string, object]>([
    ['thought chunk', text('agent_thought_chunk', 'hmm'), 'runtime.thought', { text: 'hmm' }],
    ['user chunk', text('user_message_chunk', 'q'), 'runtime.message', { text: 'q', role: 'user' }],
    [
      'tool call',
      {
        sessionUpdate: 'tool_call',
        toolCallId: 'c1',
        title: 'Read a',
        kind: 'read',
        status: 'pending',
        locations: [{ path: '/w/a' }],
      },
      'runtime.tool_call',
      { id: 'c1', name: 'Read a', kind: 'read', status: 'pending', title: 'Read a', paths: ['/w/a'] },
    ],
    ['plan', { sessionUpdate: 'plan', entries: [{ content: 'x' }] }, 'runtime.plan', { entries: [{ content: 'x' }] }],
    [
      'usage_update (context window)',
      { sessionUpdate: 'usage_update', used: 5, size: 10 },
      'runtime.raw',
      { source: 'acp.session_update', kind: 'usage_update', used: 5, size: 10 },
    ],
    [
      'mode change',
      { sessionUpdate: 'current_mode_update', currentModeId: 'plan' },
      'runtime.raw',
      { source: 'acp.session_update', kind: 'current_mode_update', mode: 'plan' },
    ],
    [
      'commands',
      { sessionUpdate: 'available_commands_update', availableCommands: [] },
      'runtime.raw',
      { source: 'acp.session_update', kind: 'available_commands_update', commands: [] },
    ],
    [
      'unknown kind kept raw',
      { sessionUpdate: 'shiny', x: 1 },
      'runtime.raw',
      {
        source: 'acp.session_update',
        kind: 'shiny',
        reason: 'unknown session update kind',
        update: { sessionUpdate: 'shiny', x: 1 },
      },
    ],
    [
      'known kind, bad shape',
      { sessionUpdate: 'tool_call' },
      'runtime.raw',
      { source: 'acp.session_update', kind: 'tool_call' },
    ],
    [
      'non-text chunk',
      { sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: 'AA' } },
      'runtime.raw',
      { kind: 'agent_message_chunk', reason: 'non-text content (image)' },
    ],
  ])('%s', (_name, update, type, data) => {
    const [event, ...rest] = translateSessionUpdate(update, newTranscriptState(), false);
    expect(rest).toEqual([]);
    expect(event?.type).toBe(type);
    expect(event?.data).toMatchObject(data);
  });

  it('keeps the tool title for updates that omit it', () => {
    const state = newTranscriptState();
    translateSessionUpdate({ sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Edit a' }, state, false);
    const [event] = translateSessionUpdate(
      { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed' },
      state,
      false,
    );
    expect(event?.data).toEqual({ id: 'c1', name: 'Edit a', status: 'completed', update: true });
  });

  it('swallows replay, then drops replayed tool call ids that arrive late', () => {
    const state = newTranscriptState();
    const replay = [
      text('user_message_chunk', 'old q'),
      text('agent_message_chunk', 'old a'),
      { sessionUpdate: 'tool_call', toolCallId: 'old1', title: 'x' },
    ];
    expect(replay.flatMap((u) => translateSessionUpdate(u, state, true))).toEqual([]);
    expect(state.assistantText).toBe('');
    expect(state.replayed).toBe(3);
    // The same tool call replayed again after the load reply (older Hermes): not new output.
    expect(
      translateSessionUpdate(
        { sessionUpdate: 'tool_call_update', toolCallId: 'old1', status: 'completed' },
        state,
        false,
      ),
    ).toEqual([]);
    expect(
      translateSessionUpdate({ sessionUpdate: 'tool_call', toolCallId: 'new1', title: 'y' }, state, false),
    ).toHaveLength(1);
  });

  it("makes a finished turn's tool ids historical", () => {
    const state = newTranscriptState();
    translateSessionUpdate({ sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'x' }, state, false);
    expect(translateSessionUpdate({ sessionUpdate: 'tool_call_update', toolCallId: 'c1' }, state, false)).toHaveLength(
      1,
    );
    endTurn(state);
    expect(translateSessionUpdate({ sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'x' }, state, false)).toEqual(
      [],
    );
  });
});

describe('mergeToolCall', () => {
  it("takes the paths of diff content blocks as locations (Hermes' edit approval names its file only there)", () => {
    const merged = mergeToolCall(newTranscriptState(), {
      toolCallId: 'edit-approval-1',
      kind: 'edit',
      content: [{ type: 'diff', path: '/w/a.txt', oldText: null, newText: 'x' }],
    } as never);
    expect(merged.locations).toEqual([{ path: '/w/a.txt' }]);
  });
});
