/**
 * Pure translation of `codex exec --json` events into shared runtime events, plus the facts the
 * classifier and the terminal event need (thread id, usage, turn outcome, last stream error).
 */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import type { CodexEvent, CodexItem, CodexUsage } from './codex-protocol.js';

/** What the run has told so far; mutated only by `translateCodexEvent`. */
export interface CodexRunState {
  threadId: string | null;
  /** Sum over `turn.completed` events. */
  usage: Usage | null;
  turnCompleted: boolean;
  /** `turn.failed` error message, when the turn failed. */
  turnFailed: string | null;
  /** The last top-level `error` message (retry notices included). */
  lastError: string | null;
  /** Text of the last completed agent_message (fallback when the -o file is missing). */
  lastAgentMessage: string | null;
  pid: number | undefined;
}

export function initialCodexState(pid?: number): CodexRunState {
  return {
    threadId: null,
    usage: null,
    turnCompleted: false,
    turnFailed: null,
    lastError: null,
    lastAgentMessage: null,
    pid,
  };
}

/** Tool output kept in an event (the full output is in the stdout log). */
const OUTPUT_CAP = 4096;
const cap = (text: string | undefined) =>
  text === undefined || text.length <= OUTPUT_CAP ? text : `${text.slice(0, OUTPUT_CAP)}[… truncated by uh]`;

/** Codex usage → ours. OpenAI counts cached within input and reasoning within output. */
export function toUsage(u: CodexUsage): Usage {
  return {
    input_tokens: u.input_tokens,
    ...(u.cached_input_tokens !== undefined ? { cached_input_tokens: u.cached_input_tokens } : {}),
    output_tokens: u.output_tokens,
    ...(u.reasoning_output_tokens !== undefined ? { reasoning_tokens: u.reasoning_output_tokens } : {}),
    total_tokens: u.input_tokens + u.output_tokens,
  };
}

function addUsage(a: Usage | null, b: Usage): Usage {
  if (a === null) return { ...b };
  const out: Usage = { ...a };
  for (const key of Object.keys(b) as (keyof Usage)[]) out[key] = (out[key] ?? 0) + (b[key] ?? 0);
  return out;
}

/** One native event → zero or more shared events; updates `state`. Never throws. */
export function translateCodexEvent(event: CodexEvent, state: CodexRunState): RuntimeEventV1[] {
  switch (event.type) {
    case 'thread.started':
      state.threadId = event.thread_id;
      return [
        { type: 'runtime.started', data: { thread_id: event.thread_id, session_id: event.thread_id, pid: state.pid } },
      ];
    case 'turn.started':
      return [{ type: 'runtime.log', data: { level: 'debug', message: 'turn started' } }];
    case 'turn.completed': {
      state.turnCompleted = true;
      const usage = toUsage(event.usage);
      state.usage = addUsage(state.usage, usage);
      return [{ type: 'runtime.usage', data: usage }];
    }
    case 'turn.failed':
      state.turnFailed = event.error.message;
      return [{ type: 'runtime.log', data: { level: 'error', message: `turn failed: ${event.error.message}` } }];
    case 'error':
      state.lastError = event.message;
      return [{ type: 'runtime.log', data: { level: 'warn', message: event.message, source: 'codex.error' } }];
    case 'item.started':
    case 'item.updated':
    case 'item.completed':
      return translateItem(event.type, event.item, state);
    case 'unknown':
      return [
        {
          type: 'runtime.raw',
          data: { source: 'codex', reason: `unknown event type ${event.event_type}`, event: event.raw },
        },
      ];
  }
}

function translateItem(
  phase: 'item.started' | 'item.updated' | 'item.completed',
  item: CodexItem,
  state: CodexRunState,
): RuntimeEventV1[] {
  const done = phase === 'item.completed';
  switch (item.type) {
    case 'agent_message':
      if (!done) return [];
      state.lastAgentMessage = item.text;
      return [{ type: 'runtime.message', data: { text: item.text, role: 'assistant', id: item.id } }];
    case 'reasoning':
      return done ? [{ type: 'runtime.thought', data: { text: item.text, id: item.id } }] : [];
    case 'plan':
      return done ? [{ type: 'runtime.plan', data: { id: item.id, text: item.text } }] : [];
    case 'todo_list':
      return [{ type: 'runtime.plan', data: { id: item.id, items: item.items, phase } }];
    case 'command_execution':
      if (phase === 'item.updated') return [];
      return [
        {
          type: 'runtime.tool_call',
          data: {
            id: item.id,
            name: 'command_execution',
            status: item.status,
            command: item.command,
            ...(done ? { exit_code: item.exit_code ?? null, output: cap(item.aggregated_output) } : {}),
          },
        },
      ];
    case 'file_change':
      return [
        {
          type: 'runtime.tool_call',
          data: { id: item.id, name: 'file_change', status: item.status, changes: item.changes },
        },
      ];
    case 'mcp_tool_call':
      if (phase === 'item.updated') return [];
      return [
        {
          type: 'runtime.tool_call',
          data: {
            id: item.id,
            name: `mcp:${item.server}/${item.tool}`,
            status: item.status,
            ...(item.error ? { error: item.error.message } : {}),
          },
        },
      ];
    case 'web_search':
      return [
        {
          type: 'runtime.tool_call',
          data: { id: item.id, name: 'web_search', status: done ? 'completed' : 'in_progress', query: item.query },
        },
      ];
    case 'error':
      // A non-fatal notice: logged, never a failure by itself.
      return [
        {
          type: 'runtime.log',
          data: { level: 'warn', message: item.message, source: 'codex.item.error', non_fatal: true },
        },
      ];
    case 'unknown':
      return [
        {
          type: 'runtime.raw',
          data: { source: 'codex', reason: `unknown item type ${item.item_type}`, item: item.raw },
        },
      ];
  }
}
