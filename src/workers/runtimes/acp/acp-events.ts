/**
 * Pure translation of ACP `session/update` payloads into shared runtime events.
 *
 * Message and thought chunks are ADDITIVE: each carries a new piece to append (unlike Codex,
 * whose payloads are cumulative). Each becomes one event with that piece; the running total is
 * kept here (`assistantText`), and the fold appends the pieces the same way.
 *
 * Replay: while a `session/load` replays history, updates are recorded (tool call ids become
 * "historical") but produce no events. Later, a `tool_call`/`tool_call_update` for a historical id
 * is dropped, so a replay that arrives after the load reply (older Hermes) is not new output.
 */
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { SessionUpdateSchema, type ToolCallFields } from './acp-protocol.js';

export interface AcpTranscriptState {
  /** Assistant text of live turns, appended chunk by chunk (the final message comes from it). */
  assistantText: string;
  /** Tool call ids from replayed history and earlier turns: updates for them are dropped. */
  readonly historicalToolIds: Set<string>;
  /** Tool call ids of the current turn, with their titles (updates often omit the title). */
  readonly turnTools: Map<string, string>;
  /**
   * What is known about each tool call of the current turn: every `tool_call`, `tool_call_update`
   * and permission `toolCall` merged (ACP updates carry optional fields; a later one may omit the
   * kind or locations an earlier one gave). The permission policy decides on this.
   */
  readonly knownTools: Map<string, ToolCallFields>;
  /** Updates swallowed as replay (counted for one summary log). */
  replayed: number;
}

export function newTranscriptState(): AcpTranscriptState {
  return { assistantText: '', historicalToolIds: new Set(), turnTools: new Map(), knownTools: new Map(), replayed: 0 };
}

/** Cap on the assistant text kept for the final message (memory stays bounded). */
const ASSISTANT_TEXT_CAP = 4 * 1024 * 1024;

type SessionUpdate = Extract<ReturnType<typeof SessionUpdateSchema.safeParse>, { success: true }>['data'];
type Kinded<K extends SessionUpdate['sessionUpdate']> = Extract<SessionUpdate, { sessionUpdate: K }>;

const raw = (kind: string, data: Record<string, unknown>): RuntimeEventV1[] => [
  { type: 'runtime.raw', data: { source: 'acp.session_update', kind, ...data } },
];

function recordReplay(parsed: ReturnType<typeof SessionUpdateSchema.safeParse>, state: AcpTranscriptState) {
  state.replayed += 1;
  const update = parsed.success ? parsed.data : null;
  if (update?.sessionUpdate === 'tool_call' || update?.sessionUpdate === 'tool_call_update') {
    state.historicalToolIds.add(update.toolCallId);
  }
}

function translateChunk(
  update: Kinded<'agent_message_chunk' | 'agent_thought_chunk' | 'user_message_chunk'>,
  state: AcpTranscriptState,
  original: unknown,
): RuntimeEventV1[] {
  if (update.content.type !== 'text') {
    return raw(update.sessionUpdate, { reason: `non-text content (${update.content.type})`, update: original });
  }
  const text = update.content.text ?? '';
  if (update.sessionUpdate === 'agent_thought_chunk') return [{ type: 'runtime.thought', data: { text } }];
  if (update.sessionUpdate === 'user_message_chunk') return [{ type: 'runtime.message', data: { text, role: 'user' } }];
  if (state.assistantText.length < ASSISTANT_TEXT_CAP) state.assistantText += text;
  return [{ type: 'runtime.message', data: { text, role: 'assistant', total_chars: state.assistantText.length } }];
}

function translateToolCall(update: Kinded<'tool_call' | 'tool_call_update'>, state: AcpTranscriptState) {
  if (state.historicalToolIds.has(update.toolCallId)) {
    state.replayed += 1;
    return [];
  }
  mergeToolCall(state, update);
  const isNew = update.sessionUpdate === 'tool_call';
  const name = toolName(update, state.turnTools.get(update.toolCallId));
  state.turnTools.set(update.toolCallId, name);
  return [{ type: 'runtime.tool_call', data: toolData(update, name, !isNew) } as RuntimeEventV1];
}

/** Translate one update. `replay` marks history being replayed: recorded, never emitted. */
export function translateSessionUpdate(
  original: unknown,
  state: AcpTranscriptState,
  replay: boolean,
): RuntimeEventV1[] {
  const kind =
    typeof original === 'object' && original !== null
      ? String((original as { sessionUpdate?: unknown }).sessionUpdate)
      : 'unknown';
  const parsed = SessionUpdateSchema.safeParse(original);
  if (replay) return (recordReplay(parsed, state), []);
  if (!parsed.success) {
    const known = SessionUpdateSchema.options.some((o) => o.shape.sessionUpdate.value === kind);
    const reason = known ? `invalid ${kind}: ${parsed.error.issues[0]?.message ?? ''}` : 'unknown session update kind';
    return raw(kind, { reason, update: original });
  }
  const update = parsed.data;
  switch (update.sessionUpdate) {
    case 'agent_message_chunk':
    case 'agent_thought_chunk':
    case 'user_message_chunk':
      return translateChunk(update, state, original);
    case 'tool_call':
    case 'tool_call_update':
      return translateToolCall(update, state);
    case 'plan':
      return [{ type: 'runtime.plan', data: { entries: update.entries } }];
    case 'usage_update':
      return raw('usage_update', {
        used: update.used,
        size: update.size,
        ...(update.cost ? { cost: update.cost } : {}),
      });
    case 'current_mode_update':
      return raw('current_mode_update', { mode: update.currentModeId });
    case 'available_commands_update':
      return raw('available_commands_update', { commands: update.availableCommands });
  }
}

/** The turn is over: its tool ids become historical (a replay of them later is dropped). */
export function endTurn(state: AcpTranscriptState): void {
  for (const id of state.turnTools.keys()) state.historicalToolIds.add(id);
  state.turnTools.clear();
  state.knownTools.clear();
}

/**
 * Merge one report about a tool call into what is known of it and return the merged view: a
 * field the report carries wins, one it omits keeps its earlier value; locations accumulate (an
 * edit is bounded by every path it was said to touch).
 */
export function mergeToolCall(state: AcpTranscriptState, report: ToolCallFields): ToolCallFields {
  const known = state.knownTools.get(report.toolCallId);
  const merged: ToolCallFields = { ...known, toolCallId: report.toolCallId };
  for (const key of ['title', 'kind', 'status', 'rawInput'] as const) {
    const value = report[key];
    if (value !== undefined && value !== null) (merged as Record<string, unknown>)[key] = value;
  }
  const locations = [...(known?.locations ?? []), ...(report.locations ?? []), ...diffLocations(report)];
  const unique = locations.filter((l, i) => locations.findIndex((o) => o.path === l.path) === i);
  if (unique.length) merged.locations = unique;
  state.knownTools.set(report.toolCallId, merged);
  return merged;
}

/**
 * The paths of a report's `diff` content blocks, as locations: an agent may name the file it
 * edits only there (Hermes' edit approval request has no locations, only the diff).
 */
function diffLocations(report: ToolCallFields): { path: string }[] {
  const content = (report as { content?: unknown }).content;
  if (!Array.isArray(content)) return [];
  return content.flatMap((block: unknown) => {
    const b = block as { type?: unknown; path?: unknown } | null;
    return b && b.type === 'diff' && typeof b.path === 'string' && b.path !== '' ? [{ path: b.path }] : [];
  });
}

function toolName(update: ToolCallFields & { name?: unknown }, known: string | undefined): string {
  if (typeof update.name === 'string' && update.name) return update.name;
  return update.title ?? known ?? update.kind ?? 'tool';
}

function toolData(update: ToolCallFields, name: string, isUpdate: boolean) {
  return {
    id: update.toolCallId,
    name,
    ...(update.status ? { status: update.status } : {}),
    ...(update.kind ? { kind: update.kind } : {}),
    ...(update.title ? { title: update.title } : {}),
    ...(update.locations?.length ? { paths: update.locations.map((l) => l.path) } : {}),
    ...(isUpdate ? { update: true } : {}),
  };
}
