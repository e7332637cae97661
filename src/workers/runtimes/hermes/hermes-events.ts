/**
 * Pure translation of Hermes' stream-json lines into shared runtime events. The caller owns one
 * `HermesRunState` per run, feeds it every parsed line in order and calls `flushHermesText` at
 * the end; nothing here does I/O.
 */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { preview } from '../../../shared/runtime/preview.js';
import type { HermesLine, HermesResult } from './hermes-protocol.js';

/** Assistant text kept per `runtime.message` event; the sentinel scan sees all of it anyway. */
const MESSAGE_CAP = 64 * 1024;

export interface HermesRunState {
  sessionId: string | null;
  model: string | null;
  /** Text deltas since the last tool event or result, flushed as one `runtime.message`. */
  pendingText: string;
  /** The terminal `result` record, once seen. */
  result: HermesResult | null;
  toolCalls: number;
  /** Ids handed to tool calls that came without one, per tool name, to pair use and result. */
  openTools: Map<string, string[]>;
  /** Event types this adapter does not know, reported once each. */
  unknownTypes: Set<string>;
}

export function newHermesRunState(): HermesRunState {
  return {
    sessionId: null,
    model: null,
    pendingText: '',
    result: null,
    toolCalls: 0,
    openTools: new Map(),
    unknownTypes: new Set(),
  };
}

/** Hermes' result tokens → our usage (cumulative for the run). */
export function hermesUsage(tokens: HermesResult['tokens']): Usage {
  const out: Usage = {};
  if (!tokens) return out;
  if (tokens.input !== undefined) out.input_tokens = Math.round(tokens.input);
  if (tokens.output !== undefined) out.output_tokens = Math.round(tokens.output);
  if (tokens.cache_read) out.cached_input_tokens = Math.round(tokens.cache_read);
  if (tokens.total) out.total_tokens = Math.round(tokens.total);
  else if (tokens.input !== undefined || tokens.output !== undefined)
    out.total_tokens = (out.input_tokens ?? 0) + (out.output_tokens ?? 0);
  return out;
}

/** The buffered text as one assistant message, or nothing. */
export function flushHermesText(state: HermesRunState): RuntimeEventV1[] {
  if (state.pendingText.trim() === '') {
    state.pendingText = '';
    return [];
  }
  const text = state.pendingText;
  state.pendingText = '';
  return [{ type: 'runtime.message', data: { role: 'assistant', text } }];
}

function toolId(state: HermesRunState, name: string, given: string | undefined, opening: boolean): string {
  if (given) return given;
  const open = state.openTools.get(name) ?? [];
  if (opening) {
    const id = `hermes-tool-${state.toolCalls}`;
    open.push(id);
    state.openTools.set(name, open);
    return id;
  }
  return open.shift() ?? `hermes-tool-${name}-orphan-${state.toolCalls}`;
}

/** Update `state` with one line and return the shared events it maps to. */
export function translateHermesEvent(state: HermesRunState, line: HermesLine, pid?: number): RuntimeEventV1[] {
  switch (line.type) {
    case 'system': {
      if (line.subtype !== 'init') return [];
      if (line.session_id) state.sessionId = line.session_id;
      if (line.model) state.model = line.model;
      return [
        {
          type: 'runtime.started',
          data: {
            ...(line.session_id ? { session_id: line.session_id } : {}),
            ...(line.model ? { model: line.model } : {}),
            ...(pid !== undefined ? { pid } : {}),
          },
        },
      ];
    }
    case 'text':
      if (state.pendingText.length < MESSAGE_CAP)
        state.pendingText = (state.pendingText + line.text).slice(0, MESSAGE_CAP);
      return [];
    case 'tool_use': {
      const events = flushHermesText(state);
      state.toolCalls += 1;
      const id = toolId(state, line.name, line.tool_call_id, true);
      events.push({
        type: 'runtime.tool_call',
        data: {
          id,
          name: line.name,
          status: 'started',
          ...(line.input !== undefined ? { args: preview(line.input) } : {}),
        },
      });
      return events;
    }
    case 'tool_result': {
      const events = flushHermesText(state);
      const id = toolId(state, line.name, line.tool_call_id, false);
      events.push({
        type: 'runtime.tool_call',
        data: {
          id,
          name: line.name,
          status: line.is_error ? 'failed' : 'completed',
          result: preview(line.output ?? ''),
          ...(line.duration_ms !== undefined ? { duration_ms: line.duration_ms } : {}),
        },
      });
      return events;
    }
    case 'result': {
      const events = flushHermesText(state);
      state.result = line;
      if (line.session_id) state.sessionId = line.session_id;
      const usage = hermesUsage(line.tokens);
      if (Object.keys(usage).length > 0) events.push({ type: 'runtime.usage', data: { ...usage, cumulative: true } });
      if (line.error) events.push({ type: 'runtime.log', data: { level: 'error', message: `hermes: ${line.error}` } });
      return events;
    }
    case 'unknown':
      if (state.unknownTypes.has(line.raw_type)) return [];
      state.unknownTypes.add(line.raw_type);
      return [
        {
          type: 'runtime.raw',
          data: {
            source: 'stdout',
            reason: 'unknown_event_type',
            event_type: line.raw_type,
            note: 'reported once per type',
          },
        },
      ];
  }
}
