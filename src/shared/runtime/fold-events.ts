import type { Outcome, Usage } from '../contracts/runtime-result.js';
import type { RuntimeEventV1 } from './v1/runtime-event.js';

export interface FoldedRuntime {
  outcome: Outcome;
  session_id: string | null;
  thread_id: string | null;
  turn_id: string | null;
  final_message: string;
  final_message_source: 'sentinel' | 'native' | 'none';
  usage: Usage;
  /** The model the runtime said it used (its usage report, `runtime.finished`), null when it said none. */
  model: string | null;
  /** The runtime's own version as it reported it, null when it did not. */
  runtime_version: string | null;
  tool_calls: number;
  messages: number;
  /** Assistant text seen in `runtime.message` events, capped (for summaries). */
  assistant_text: string;
  /** The terminal event said dispatch cannot be proven: the operation is UNKNOWN. */
  dispatch_unknown: boolean;
}

const TEXT_CAP = 16 * 1024;

/**
 * The one pure fold from runtime events to the runtime result; streaming and batch views
 * both use it, so they cannot drift apart. Usage: cumulative reports replace, others add.
 */
export function foldRuntimeEvents(events: Iterable<RuntimeEventV1>): FoldedRuntime {
  const state = initialFold();
  const toolIds = new Set<string>();
  for (const event of events) foldOne(state, event, toolIds);
  return state;
}

/** The fold before any event: a failed outcome until a terminal event says otherwise. */
export function initialFold(
  outcome: FoldedRuntime['outcome'] = {
    status: 'failed',
    raw: 'no_terminal_event',
    message: 'runtime ended without a terminal outcome',
    timed_out: false,
  },
): FoldedRuntime {
  return {
    outcome,
    session_id: null,
    thread_id: null,
    turn_id: null,
    final_message: '',
    final_message_source: 'none',
    usage: {},
    model: null,
    runtime_version: null,
    tool_calls: 0,
    messages: 0,
    assistant_text: '',
    dispatch_unknown: false,
  };
}

export function foldOne(state: FoldedRuntime, event: RuntimeEventV1, toolIds: Set<string>): void {
  switch (event.type) {
    case 'runtime.started':
      state.session_id = event.data.session_id ?? state.session_id;
      state.thread_id = event.data.thread_id ?? state.thread_id;
      state.turn_id = event.data.turn_id ?? state.turn_id;
      return;
    case 'runtime.message':
      if (event.data.role === 'user') return;
      state.messages += 1;
      if (state.assistant_text.length < TEXT_CAP)
        state.assistant_text = (state.assistant_text + event.data.text).slice(0, TEXT_CAP);
      return;
    case 'runtime.tool_call': {
      const id = event.data.id;
      if (id === undefined) state.tool_calls += 1;
      else if (!toolIds.has(id)) {
        toolIds.add(id);
        state.tool_calls += 1;
      }
      return;
    }
    case 'runtime.usage': {
      const { cumulative, ...usage } = event.data;
      state.usage = cumulative ? { ...usage } : addUsage(state.usage, usage);
      return;
    }
    case 'runtime.finished': {
      const d = event.data;
      state.outcome = d.outcome;
      state.final_message = d.final_message;
      state.final_message_source = d.final_message_source;
      state.session_id = d.session_id ?? state.session_id;
      state.thread_id = d.thread_id ?? state.thread_id;
      state.turn_id = d.turn_id ?? state.turn_id;
      if (d.usage) state.usage = { ...d.usage };
      if (typeof d.model === 'string') state.model = d.model;
      if (typeof d.runtime_version === 'string') state.runtime_version = d.runtime_version;
      state.dispatch_unknown = d.dispatch === 'unknown';
      return;
    }
    default:
      return;
  }
}

export function addUsage(a: Usage, b: Usage): Usage {
  const out: Usage = { ...a };
  for (const key of Object.keys(b) as (keyof Usage)[]) {
    const v = b[key];
    if (v !== undefined) out[key] = (out[key] ?? 0) + v;
  }
  return out;
}
