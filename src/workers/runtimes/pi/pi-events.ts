/**
 * Pure translation of pi's JSON-mode events into shared runtime events. The caller owns one
 * `PiRunState` per run and feeds it every parsed line in order; nothing here does I/O.
 */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { addUsage } from '../../../shared/runtime/fold-events.js';
import { preview } from '../../../shared/runtime/preview.js';
import type { PiLine, PiMessage, PiUsage } from './pi-protocol.js';

/** What a run has learnt so far; read by the classifier and the final message resolution. */
export interface PiRunState {
  sessionId: string | null;
  /** Joined text of the last assistant `message_end` that had text. */
  lastAssistantText: string | null;
  /** `stopReason` and `errorMessage` of the last assistant `message_end`. */
  lastStopReason: string | null;
  lastErrorMessage: string | null;
  /** Last assistant text found in `agent_end.messages` (the fallback). */
  agentEndText: string | null;
  sawAgentEnd: boolean;
  /** Summed over assistant messages (each `message_end` reports its own request). */
  usage: Usage;
  toolCalls: number;
  /** Event types this adapter does not know, reported once each (oh-my-pi has many more). */
  unknownTypes: Set<string>;
}

export function newPiRunState(): PiRunState {
  return {
    sessionId: null,
    lastAssistantText: null,
    lastStopReason: null,
    lastErrorMessage: null,
    agentEndText: null,
    sawAgentEnd: false,
    usage: {},
    toolCalls: 0,
    unknownTypes: new Set(),
  };
}

/** Text blocks of a message, joined; null when it has none. */
export function assistantText(message: PiMessage): string | null {
  const content = message.content;
  if (typeof content === 'string') return content === '' ? null : content;
  if (!content) return null;
  const texts = content.filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text as string);
  return texts.length === 0 ? null : texts.join('');
}

/** pi's usage → ours. `totalTokens` and `cost.total` are kept when present. */
export function toUsage(u: PiUsage): Usage {
  const out: Usage = {};
  if (u.input !== undefined) out.input_tokens = Math.round(u.input);
  if (u.output !== undefined) out.output_tokens = Math.round(u.output);
  if (u.cacheRead !== undefined && u.cacheRead > 0) out.cached_input_tokens = Math.round(u.cacheRead);
  if (u.totalTokens !== undefined) out.total_tokens = Math.round(u.totalTokens);
  else if (u.input !== undefined || u.output !== undefined)
    out.total_tokens = Math.round((u.input ?? 0) + (u.output ?? 0));
  if (u.cost?.total !== undefined && u.cost.total > 0) out.cost_usd = u.cost.total;
  return out;
}

const log = (level: 'info' | 'warn', message: string): RuntimeEventV1[] => [
  { type: 'runtime.log', data: { level, message } },
];

function agentEnd(state: PiRunState, line: Extract<PiLine, { type: 'agent_end' }>): RuntimeEventV1[] {
  state.sawAgentEnd = true;
  for (let i = line.messages.length - 1; i >= 0; i--) {
    const m = line.messages[i];
    if (m?.role !== 'assistant') continue;
    const text = assistantText(m);
    if (text !== null) {
      state.agentEndText = text;
      break;
    }
  }
  return [];
}

function unknownLine(state: PiRunState, line: Extract<PiLine, { type: 'unknown' }>): RuntimeEventV1[] {
  if (state.unknownTypes.has(line.raw_type)) return [];
  state.unknownTypes.add(line.raw_type);
  const data = { source: 'stdout', reason: 'unknown_event_type', event_type: line.raw_type };
  return [{ type: 'runtime.raw', data: { ...data, note: 'reported once per type' } }];
}

function toolEvents(state: PiRunState, line: PiLine): RuntimeEventV1[] {
  if (line.type === 'tool_execution_start') {
    state.toolCalls += 1;
    const data = { id: line.toolCallId, name: line.toolName, status: 'started', args: preview(line.args) };
    return [{ type: 'runtime.tool_call', data }];
  }
  if (line.type !== 'tool_execution_end') return [];
  const status = line.isError ? 'failed' : 'completed';
  const data = { id: line.toolCallId, name: line.toolName, status, result: preview(line.result) };
  return [{ type: 'runtime.tool_call', data }];
}

/** Update `state` with one line and return the shared events it maps to (often none). */
export function translatePiEvent(state: PiRunState, line: PiLine, pid?: number): RuntimeEventV1[] {
  switch (line.type) {
    case 'session': {
      state.sessionId = line.id;
      const data = {
        session_id: line.id,
        ...(pid !== undefined ? { pid } : {}),
        ...(line.cwd ? { cwd: line.cwd } : {}),
      };
      return [{ type: 'runtime.started', data }];
    }
    case 'message_end':
      return messageEnd(state, line.message);
    case 'tool_execution_start':
    case 'tool_execution_end':
      return toolEvents(state, line);
    case 'agent_end':
      return agentEnd(state, line);
    case 'auto_retry_start': {
      const attempt = `attempt ${line.attempt ?? '?'} of ${line.maxAttempts ?? '?'}`;
      return log('warn', `pi retries (${attempt}): ${line.errorMessage ?? 'provider error'}`);
    }
    case 'auto_retry_end':
      return line.success ? [] : log('warn', `pi gave up retrying: ${line.finalError ?? 'unknown error'}`);
    case 'compaction_start':
      return log('info', `pi compacts its context (${line.reason ?? 'unknown reason'})`);
    case 'compaction_end':
      return line.errorMessage ? log('warn', `pi compaction failed: ${line.errorMessage}`) : [];
    case 'unknown':
      return unknownLine(state, line);
    default:
      // agent_start, turn_*, message_start, message_update, tool_execution_update, queue_update:
      // nothing a receipt needs (deltas are summed up by the message_end that follows).
      return [];
  }
}

function messageEnd(state: PiRunState, message: PiMessage): RuntimeEventV1[] {
  if (message.role !== 'assistant') return [];
  const events: RuntimeEventV1[] = [];
  state.lastStopReason = message.stopReason ?? null;
  state.lastErrorMessage = message.errorMessage ?? null;
  if (Array.isArray(message.content)) {
    for (const block of message.content) {
      if (block.type === 'thinking' && block.thinking)
        events.push({ type: 'runtime.thought', data: { text: block.thinking } });
    }
  }
  const text = assistantText(message);
  if (text !== null) {
    state.lastAssistantText = text;
    events.push({ type: 'runtime.message', data: { role: 'assistant', text } });
  }
  if (message.usage) {
    const usage = toUsage(message.usage);
    if (Object.keys(usage).length > 0) {
      state.usage = addUsage(state.usage, usage);
      events.push({ type: 'runtime.usage', data: usage });
    }
  }
  if (message.stopReason === 'error' || message.stopReason === 'aborted') {
    events.push({
      type: 'runtime.log',
      data: { level: 'error', message: `pi: ${message.errorMessage ?? `request ${message.stopReason}`}` },
    });
  }
  return events;
}
