/**
 * The Codex app-server wire (codex 0.171.0, v2 protocol; `codex app-server generate-ts` prints
 * the full TypeScript of it). JSON-RPC over the child's stdio, one JSON object per line, with NO
 * `"jsonrpc"` member (the `codex` dialect of `src/shared/transport/jsonrpc-message.ts`):
 *
 *   → {"id":1,"method":"initialize","params":{"clientInfo":{…},"capabilities":{…}}}
 *   ← {"id":1,"result":{"userAgent":"…","codexHome":"/abs","platformFamily":"unix","platformOs":"linux"}}
 *   → {"method":"initialized"}
 *   → thread/start {cwd,sandbox,approvalPolicy,model?}   ← {thread:{id,sessionId,…},…}
 *   → thread/resume {threadId,cwd,…,excludeTurns:true}    ← {thread:{…},…}
 *   → thread/turns/list {threadId,cursor?,limit?}          ← {data:[Turn],nextCursor}
 *   → turn/start {threadId,clientUserMessageId,input:[{type:"text",text,text_elements:[]}]}
 *   ← {turn:{id,status:"inProgress",…}}
 *   → turn/interrupt {threadId,turnId}                     ← {}
 *   ← notifications: turn/started, item/started, item/completed (authoritative item), item/agentMessage/delta,
 *     item/reasoning/summaryTextDelta, item/reasoning/textDelta, turn/diff/updated, turn/plan/updated,
 *     thread/tokenUsage/updated, error {error:TurnError,willRetry}, turn/completed {turn}
 *   ← server→client requests (must be answered): item/commandExecution/requestApproval,
 *     item/fileChange/requestApproval, item/permissions/requestApproval, … → {decision:"accept"|"decline"}
 *
 * A Turn is `{id, items, status: completed|interrupted|failed|inProgress, error: TurnError|null}`;
 * the user message item of a turn started with `clientUserMessageId` carries it as `clientId`.
 * Schemas are loose (unknown members kept): the server adds fields between versions.
 */
import { z } from 'zod';

/** `TurnError.codexErrorInfo`: a camelCase string, or a one-key object (`{"httpConnectionFailed":{"httpStatusCode":401}}`). */
export const CodexErrorInfoSchema = z.union([z.string(), z.record(z.string(), z.unknown())]).nullable();
export type CodexErrorInfo = z.infer<typeof CodexErrorInfoSchema>;

export const TurnErrorSchema = z.looseObject({
  message: z.string(),
  codexErrorInfo: CodexErrorInfoSchema.optional().default(null),
  additionalDetails: z.string().nullable().optional(),
});
export type TurnError = z.infer<typeof TurnErrorSchema>;

export const TurnStatusSchema = z.enum(['completed', 'interrupted', 'failed', 'inProgress']);
export type TurnStatus = z.infer<typeof TurnStatusSchema>;
export type TerminalTurnStatus = Exclude<TurnStatus, 'inProgress'>;

export const ThreadItemSchema = z.looseObject({ type: z.string(), id: z.string() });
export type ThreadItem = z.infer<typeof ThreadItemSchema> & Record<string, unknown>;

export const TurnSchema = z.looseObject({
  id: z.string().min(1),
  items: z.array(ThreadItemSchema).default([]),
  status: TurnStatusSchema,
  error: TurnErrorSchema.nullable().optional().default(null),
});
export type Turn = z.infer<typeof TurnSchema>;

export const ThreadSchema = z.looseObject({
  id: z.string().min(1),
  sessionId: z.string().optional(),
  status: z.looseObject({ type: z.string() }).optional(),
});

export const InitializeResultSchema = z.looseObject({ userAgent: z.string(), codexHome: z.string().min(1) });
export const ThreadStartResultSchema = z.looseObject({ thread: ThreadSchema, model: z.string().optional() });
export const TurnStartResultSchema = z.looseObject({ turn: TurnSchema });
export const TurnsListResultSchema = z.looseObject({
  data: z.array(TurnSchema),
  nextCursor: z.string().nullable().optional(),
});

// Notifications (params), keyed by method.
export const TurnNotificationSchema = z.looseObject({ threadId: z.string(), turn: TurnSchema });
export const ItemNotificationSchema = z.looseObject({
  threadId: z.string(),
  turnId: z.string(),
  item: ThreadItemSchema,
});
export const DeltaNotificationSchema = z.looseObject({
  threadId: z.string(),
  turnId: z.string(),
  itemId: z.string(),
  delta: z.string(),
});
export const ErrorNotificationSchema = z.looseObject({
  error: TurnErrorSchema,
  willRetry: z.boolean(),
  threadId: z.string(),
  turnId: z.string(),
});
const TokenBreakdownSchema = z.looseObject({
  totalTokens: z.number().int().nonnegative(),
  inputTokens: z.number().int().nonnegative(),
  cachedInputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  reasoningOutputTokens: z.number().int().nonnegative(),
});
export const TokenUsageNotificationSchema = z.looseObject({
  threadId: z.string(),
  turnId: z.string(),
  tokenUsage: z.looseObject({ total: TokenBreakdownSchema, last: TokenBreakdownSchema }),
});
export type TokenBreakdown = z.infer<typeof TokenBreakdownSchema>;
export const DiffNotificationSchema = z.looseObject({ threadId: z.string(), turnId: z.string(), diff: z.string() });
export const PlanNotificationSchema = z.looseObject({
  threadId: z.string(),
  turnId: z.string(),
  plan: z.array(z.unknown()),
});

// Server→client approval requests (params).
export const CommandApprovalParamsSchema = z.looseObject({
  threadId: z.string(),
  turnId: z.string(),
  itemId: z.string(),
  command: z.string().nullable().optional(),
  cwd: z.string().nullable().optional(),
  reason: z.string().nullable().optional(),
  commandActions: z.array(z.unknown()).nullable().optional(),
  networkApprovalContext: z.unknown().optional(),
});
export const FileChangeApprovalParamsSchema = z.looseObject({
  threadId: z.string(),
  turnId: z.string(),
  itemId: z.string(),
  grantRoot: z.string().nullable().optional(),
  reason: z.string().nullable().optional(),
});

/** The user message item of a turn, with the client message id it was started with. */
export function clientIdOfTurn(turn: Turn): string | null {
  for (const item of turn.items) {
    if (item.type === 'userMessage' && typeof (item as Record<string, unknown>).clientId === 'string') {
      return (item as Record<string, unknown>).clientId as string;
    }
  }
  return null;
}

/** The text of the turn's last `agentMessage` item (the authoritative final answer), or null. */
export function lastAgentMessage(turn: Turn): string | null {
  let text: string | null = null;
  for (const item of turn.items) {
    const t = (item as Record<string, unknown>).text;
    if (item.type === 'agentMessage' && typeof t === 'string') text = t;
  }
  return text;
}
