/**
 * Pure translation of app-server notifications into shared runtime events, for ONE turn: events
 * of other turns (earlier turns of a resumed thread) are dropped.
 *
 *   item/agentMessage/delta            → runtime.message (delta: true)
 *   item/reasoning/*Delta              → runtime.thought
 *   item/completed agentMessage        → runtime.message with the full text, unless the deltas
 *                                        already said exactly that (item/completed is authoritative)
 *   item/started|completed tool items  → runtime.tool_call (commandExecution, fileChange, mcpToolCall, …)
 *   turn/plan/updated                  → runtime.plan
 *   turn/diff/updated                  → runtime.log (size only; the pipeline diffs the worktree itself)
 *   thread/tokenUsage/updated          → runtime.usage (cumulative for this turn: the sum of `last`)
 *   error                              → runtime.log warn (with will_retry and codex_error_info)
 * Anything unparseable becomes runtime.raw; nothing here throws.
 */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import {
  DeltaNotificationSchema,
  DiffNotificationSchema,
  ErrorNotificationSchema,
  ItemNotificationSchema,
  PlanNotificationSchema,
  TokenUsageNotificationSchema,
  type TokenBreakdown,
  type TurnError,
} from './codex-app-server-protocol.js';

export interface AppServerTurnState {
  turnId: string | null;
  usage: Usage | null;
  /** Delta text per agentMessage item id, to tell whether item/completed adds anything. */
  deltas: Map<string, string>;
  /** The last `error` notification of the turn (a non-retried one explains a failure). */
  lastError: (TurnError & { willRetry: boolean }) | null;
  diffBytes: number;
}

export function initialTurnState(): AppServerTurnState {
  return { turnId: null, usage: null, deltas: new Map(), lastError: null, diffBytes: 0 };
}

const TOOL_ITEMS: Record<string, string> = {
  commandExecution: 'command',
  fileChange: 'file_change',
  mcpToolCall: 'mcp',
  dynamicToolCall: 'tool',
  webSearch: 'web_search',
  collabAgentToolCall: 'agent',
  imageGeneration: 'image_generation',
};

export function addBreakdown(usage: Usage | null, b: TokenBreakdown): Usage {
  const u = usage ?? {};
  return {
    input_tokens: (u.input_tokens ?? 0) + b.inputTokens,
    cached_input_tokens: (u.cached_input_tokens ?? 0) + b.cachedInputTokens,
    output_tokens: (u.output_tokens ?? 0) + b.outputTokens,
    reasoning_tokens: (u.reasoning_tokens ?? 0) + b.reasoningOutputTokens,
    total_tokens: (u.total_tokens ?? 0) + b.totalTokens,
  };
}

function raw(method: string, reason: string, params: unknown): RuntimeEventV1[] {
  return [
    {
      type: 'runtime.raw',
      data: {
        source: 'codex-app-server',
        reason: `${method}: ${reason}`,
        line: JSON.stringify(params ?? null).slice(0, 500),
      },
    },
  ];
}

function toolEvent(
  item: Record<string, unknown> & { type: string; id: string },
  phase: 'started' | 'completed',
): RuntimeEventV1[] {
  const name = TOOL_ITEMS[item.type];
  if (!name) return [];
  const status = typeof item.status === 'string' ? item.status : phase;
  const data: Extract<RuntimeEventV1, { type: 'runtime.tool_call' }>['data'] = {
    id: item.id,
    name,
    status: phase === 'started' ? 'started' : status,
  };
  if (typeof item.command === 'string') data.command = item.command;
  if (typeof item.exitCode === 'number') data.exit_code = item.exitCode;
  if (item.type === 'fileChange' && Array.isArray(item.changes)) {
    data.paths = (item.changes as Array<{ path?: unknown }>).map((c) => c.path).filter((p) => typeof p === 'string');
  }
  return [{ type: 'runtime.tool_call', data }];
}

/** Translate one notification; mutates `state` (usage, deltas, last error). */
export function translateAppServerNotification(
  method: string,
  params: unknown,
  state: AppServerTurnState,
): RuntimeEventV1[] {
  const turnOf = (p: unknown) => (p as { turnId?: unknown } | null)?.turnId;
  if (state.turnId !== null && typeof turnOf(params) === 'string' && turnOf(params) !== state.turnId) return [];
  switch (method) {
    case 'item/agentMessage/delta':
    case 'item/reasoning/summaryTextDelta':
    case 'item/reasoning/textDelta': {
      const p = DeltaNotificationSchema.safeParse(params);
      if (!p.success) return raw(method, p.error.issues[0]?.message ?? 'invalid', params);
      if (method !== 'item/agentMessage/delta')
        return [{ type: 'runtime.thought', data: { text: p.data.delta, item_id: p.data.itemId } }];
      state.deltas.set(p.data.itemId, (state.deltas.get(p.data.itemId) ?? '') + p.data.delta);
      return [
        {
          type: 'runtime.message',
          data: { text: p.data.delta, role: 'assistant', item_id: p.data.itemId, delta: true },
        },
      ];
    }
    case 'item/started':
    case 'item/completed': {
      const p = ItemNotificationSchema.safeParse(params);
      if (!p.success) return raw(method, p.error.issues[0]?.message ?? 'invalid', params);
      const item = p.data.item as Record<string, unknown> & { type: string; id: string };
      if (method === 'item/completed' && item.type === 'agentMessage' && typeof item.text === 'string') {
        if (state.deltas.get(item.id) === item.text) return [];
        return [{ type: 'runtime.message', data: { text: item.text, role: 'assistant', item_id: item.id } }];
      }
      if (method === 'item/completed' && item.type === 'reasoning' && !state.deltas.has(item.id)) {
        const summary = Array.isArray(item.summary) ? item.summary.filter((s) => typeof s === 'string').join('\n') : '';
        return summary ? [{ type: 'runtime.thought', data: { text: summary, item_id: item.id } }] : [];
      }
      return toolEvent(item, method === 'item/started' ? 'started' : 'completed');
    }
    case 'turn/plan/updated': {
      const p = PlanNotificationSchema.safeParse(params);
      return p.success ? [{ type: 'runtime.plan', data: { plan: p.data.plan } }] : raw(method, 'invalid', params);
    }
    case 'turn/diff/updated': {
      const p = DiffNotificationSchema.safeParse(params);
      if (!p.success) return raw(method, 'invalid', params);
      state.diffBytes = Buffer.byteLength(p.data.diff);
      return [
        { type: 'runtime.log', data: { level: 'debug', message: 'turn diff updated', diff_bytes: state.diffBytes } },
      ];
    }
    case 'thread/tokenUsage/updated': {
      const p = TokenUsageNotificationSchema.safeParse(params);
      if (!p.success) return raw(method, p.error.issues[0]?.message ?? 'invalid', params);
      if (p.data.turnId !== state.turnId) return [];
      state.usage = addBreakdown(state.usage, p.data.tokenUsage.last);
      return [{ type: 'runtime.usage', data: { ...state.usage, cumulative: true } }];
    }
    case 'error': {
      const p = ErrorNotificationSchema.safeParse(params);
      if (!p.success) return raw(method, p.error.issues[0]?.message ?? 'invalid', params);
      state.lastError = { ...p.data.error, willRetry: p.data.willRetry };
      return [
        {
          type: 'runtime.log',
          data: {
            level: p.data.willRetry ? 'warn' : 'error',
            message: p.data.error.message,
            will_retry: p.data.willRetry,
            codex_error_info: p.data.error.codexErrorInfo ?? null,
          },
        },
      ];
    }
    default:
      return [];
  }
}
