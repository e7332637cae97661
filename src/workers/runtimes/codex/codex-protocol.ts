/**
 * The wire of `codex exec --json` (codex-rs/exec `exec_events.rs`; checked against codex-cli
 * 0.171.0): one JSON object per stdout line, in this order for a normal run:
 *
 *   {"type":"thread.started","thread_id":"01a2…"}                 first; the thread id
 *   {"type":"turn.started"}
 *   {"type":"item.started"|"item.updated"|"item.completed","item":{"id":"item_1","type":…}}
 *       item types: agent_message {text}, reasoning {text}, command_execution {command,
 *       aggregated_output, exit_code, status}, file_change {changes[{path,kind}], status},
 *       mcp_tool_call {server, tool, arguments, result?, error?, status}, web_search {query},
 *       todo_list {items[{text, completed}]}, plan {text}, and `error` {message}: a NON-fatal
 *       notice (e.g. "Model metadata for `x` not found"), never a failure by itself
 *   {"type":"turn.completed","usage":{input_tokens, cached_input_tokens, output_tokens,
 *       reasoning_output_tokens, cache_write_input_tokens}}      the turn's token usage
 *   {"type":"turn.failed","error":{"message":…}}                  the turn failed; exit code 1
 *   {"type":"error","message":…}                                  stream error; also used for
 *       retry notices ("Reconnecting... 2/5 (…)"), so not terminal by itself
 *
 * The final assistant message is also written to the `--output-last-message` file (empty when
 * the turn failed). Unknown event and item types are accepted (newer codex versions add them)
 * and surface as `runtime.raw` events; a known type with a wrong shape is a malformed line.
 */
import { z } from 'zod';

const ItemBase = { id: z.string() };

export const AgentMessageItem = z.looseObject({ ...ItemBase, type: z.literal('agent_message'), text: z.string() });
export const ReasoningItem = z.looseObject({ ...ItemBase, type: z.literal('reasoning'), text: z.string() });
export const PlanItem = z.looseObject({ ...ItemBase, type: z.literal('plan'), text: z.string() });
export const CommandExecutionItem = z.looseObject({
  ...ItemBase,
  type: z.literal('command_execution'),
  command: z.string(),
  aggregated_output: z.string().optional(),
  exit_code: z.number().int().nullable().optional(),
  status: z.string(),
});
export const FileChangeItem = z.looseObject({
  ...ItemBase,
  type: z.literal('file_change'),
  changes: z.array(z.looseObject({ path: z.string(), kind: z.string() })),
  status: z.string(),
});
export const McpToolCallItem = z.looseObject({
  ...ItemBase,
  type: z.literal('mcp_tool_call'),
  server: z.string(),
  tool: z.string(),
  arguments: z.unknown().optional(),
  error: z.looseObject({ message: z.string() }).nullable().optional(),
  status: z.string(),
});
export const WebSearchItem = z.looseObject({ ...ItemBase, type: z.literal('web_search'), query: z.string() });
export const TodoListItem = z.looseObject({
  ...ItemBase,
  type: z.literal('todo_list'),
  items: z.array(z.looseObject({ text: z.string(), completed: z.boolean() })),
});
export const ErrorItem = z.looseObject({ ...ItemBase, type: z.literal('error'), message: z.string() });

const KNOWN_ITEM_TYPES = new Set([
  'agent_message',
  'reasoning',
  'plan',
  'command_execution',
  'file_change',
  'mcp_tool_call',
  'web_search',
  'todo_list',
  'error',
]);
/** An item type this adapter does not know (newer codex); kept, shown as `runtime.raw`. */
export const UnknownItem = z
  .looseObject({ ...ItemBase, type: z.string().refine((t) => !KNOWN_ITEM_TYPES.has(t)) })
  .transform((item) => ({
    type: 'unknown' as const,
    id: item.id,
    item_type: item.type,
    raw: item as Record<string, unknown>,
  }));

/**
 * Known items dispatch on `type` (one schema tried, not each in turn: a plain union builds the
 * issues of every option that fails, which was most of the parse time of a codex run's lines);
 * any other type is an UnknownItem.
 */
export const CodexItemSchema = z.union([
  z.discriminatedUnion('type', [
    AgentMessageItem,
    ReasoningItem,
    PlanItem,
    CommandExecutionItem,
    FileChangeItem,
    McpToolCallItem,
    WebSearchItem,
    TodoListItem,
    ErrorItem,
  ]),
  UnknownItem,
]);
export type CodexItem = z.infer<typeof CodexItemSchema>;

export const CodexUsageSchema = z.looseObject({
  input_tokens: z.number().int().nonnegative(),
  cached_input_tokens: z.number().int().nonnegative().optional(),
  output_tokens: z.number().int().nonnegative(),
  reasoning_output_tokens: z.number().int().nonnegative().optional(),
});
export type CodexUsage = z.infer<typeof CodexUsageSchema>;

export const ThreadStarted = z.looseObject({ type: z.literal('thread.started'), thread_id: z.string().min(1) });
export const TurnStarted = z.looseObject({ type: z.literal('turn.started') });
export const TurnCompleted = z.looseObject({ type: z.literal('turn.completed'), usage: CodexUsageSchema });
export const TurnFailed = z.looseObject({
  type: z.literal('turn.failed'),
  error: z.looseObject({ message: z.string() }),
});
export const ItemEvent = z.looseObject({
  type: z.enum(['item.started', 'item.updated', 'item.completed']),
  item: CodexItemSchema,
});
export const StreamError = z.looseObject({ type: z.literal('error'), message: z.string() });

const KNOWN_EVENT_TYPES = new Set([
  'thread.started',
  'turn.started',
  'turn.completed',
  'turn.failed',
  'item.started',
  'item.updated',
  'item.completed',
  'error',
]);
/** An event type this adapter does not know (newer codex); kept, shown as `runtime.raw`. */
export const UnknownEvent = z
  .looseObject({ type: z.string().refine((t) => !KNOWN_EVENT_TYPES.has(t)) })
  .transform((event) => ({ type: 'unknown' as const, event_type: event.type, raw: event as Record<string, unknown> }));

/** One stdout line of `codex exec --json`: known types dispatch on `type`, any other is an UnknownEvent. */
export const CodexEventSchema = z.union([
  z.discriminatedUnion('type', [ThreadStarted, TurnStarted, TurnCompleted, TurnFailed, ItemEvent, StreamError]),
  UnknownEvent,
]);
export type CodexEvent = z.infer<typeof CodexEventSchema>;
