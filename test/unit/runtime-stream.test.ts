import { describe, expect, it } from 'vitest';
import { guardTerminal } from '../../src/shared/runtime/guard-terminal.js';
import { foldRuntimeEvents } from '../../src/shared/runtime/fold-events.js';
import type { RuntimeEventV1 } from '../../src/shared/runtime/v1/index.js';

const finished = (status: 'completed' | 'failed'): RuntimeEventV1 => ({
  type: 'runtime.finished',
  data: {
    outcome: { status, raw: status, message: status, timed_out: false },
    final_message: 'fm',
    final_message_source: 'sentinel',
  },
});

async function collect(events: AsyncIterable<RuntimeEventV1>) {
  const out: RuntimeEventV1[] = [];
  for await (const e of guardTerminal(events)) out.push(e);
  return out;
}

describe('guardTerminal', () => {
  it('passes a well-formed stream through', async () => {
    async function* s() {
      yield { type: 'runtime.started', data: { session_id: 's1' } } as RuntimeEventV1;
      yield finished('completed');
    }
    expect((await collect(s())).map((e) => e.type)).toEqual(['runtime.started', 'runtime.finished']);
  });

  it('drops anything after the terminal event', async () => {
    async function* s() {
      yield finished('completed');
      yield { type: 'runtime.message', data: { text: 'late' } } as RuntimeEventV1;
      yield finished('failed');
    }
    const out = await collect(s());
    expect(out).toHaveLength(1);
  });

  it('turns a stream that ends early into a failed terminal event', async () => {
    async function* s() {
      yield { type: 'runtime.message', data: { text: 'hi' } } as RuntimeEventV1;
    }
    const out = await collect(s());
    expect(out.at(-1)?.type).toBe('runtime.finished');
    expect(foldRuntimeEvents(out).outcome.raw).toBe('no_terminal_event');
  });

  it('turns a thrown transport error into a failed terminal event', async () => {
    async function* s(): AsyncGenerator<RuntimeEventV1> {
      yield { type: 'runtime.message', data: { text: 'hi' } };
      throw new Error('socket hang up');
    }
    const folded = foldRuntimeEvents(await collect(s()));
    expect(folded.outcome.status).toBe('failed');
    expect(folded.outcome.message).toContain('socket hang up');
  });
});

describe('foldRuntimeEvents', () => {
  it('collects ids, usage (added or cumulative), deduped tool calls and the final message', () => {
    const folded = foldRuntimeEvents([
      { type: 'runtime.started', data: { session_id: 's1', thread_id: 't1' } },
      { type: 'runtime.usage', data: { input_tokens: 10, output_tokens: 2 } },
      { type: 'runtime.usage', data: { input_tokens: 5, output_tokens: 1 } },
      { type: 'runtime.tool_call', data: { id: 'a', name: 'edit' } },
      { type: 'runtime.tool_call', data: { id: 'a', name: 'edit', status: 'completed' } },
      { type: 'runtime.message', data: { text: 'hello' } },
      {
        ...finished('completed'),
        data: { ...(finished('completed').data as object), turn_id: 'u1' },
      } as RuntimeEventV1,
    ]);
    expect(folded).toMatchObject({
      session_id: 's1',
      thread_id: 't1',
      turn_id: 'u1',
      tool_calls: 1,
      messages: 1,
      usage: { input_tokens: 15, output_tokens: 3 },
      final_message: 'fm',
    });
    const cumulative = foldRuntimeEvents([
      { type: 'runtime.usage', data: { input_tokens: 10, cumulative: true } },
      { type: 'runtime.usage', data: { input_tokens: 12, cumulative: true } },
    ]);
    expect(cumulative.usage).toEqual({ input_tokens: 12 });
  });
});
