/**
 * The Agent Client Protocol (ACP, protocol version 1) as we use it, over JSON-RPC 2.0 on the
 * agent's stdin/stdout, one message per line (`src/shared/transport/jsonrpc-ndjson.ts`).
 *
 * Client → agent requests:
 *   initialize      {protocolVersion: 1, clientCapabilities: {fs: {readTextFile: false, writeTextFile: false}, terminal: false}, clientInfo}
 *                   → {protocolVersion, agentCapabilities: {loadSession?}, authMethods?: [{id, name, type?: "terminal"|…}], agentInfo?}
 *   authenticate    {methodId} → {} | null   (Hermes answers null when it did not accept the method)
 *   session/new     {cwd, mcpServers: []} → {sessionId, modes?, models?}   (error -32000 = auth required)
 *   session/load    {sessionId, cwd, mcpServers: []} → {modes?} | null  (null: unknown session, Hermes)
 *                   History is replayed as session/update notifications, before the reply (current
 *                   Hermes, the spec) or shortly after it (older Hermes).
 *   session/prompt  {sessionId, prompt: [{type: "text", text}]} → {stopReason, usage?}
 *                   stopReason: end_turn | max_tokens | max_turn_requests | refusal | cancelled
 * Client → agent notifications:
 *   session/cancel  {sessionId}  (the pending prompt must then answer stopReason "cancelled")
 * Agent → client notifications:
 *   session/update  {sessionId, update: {sessionUpdate: <kind>, …}}  kinds below; others are kept raw
 * Agent → client requests:
 *   session/request_permission {sessionId, toolCall, options: [{optionId, name, kind}]}
 *                   → {outcome: {outcome: "selected", optionId}} | {outcome: {outcome: "cancelled"}}
 *   fs/*, terminal/*, vendor `_…` methods: answered -32601 (we advertise none of them).
 *
 * Agent payloads are parsed loosely (unknown members kept), since agents add fields freely.
 */
import { z } from 'zod';

export const ACP_PROTOCOL_VERSION = 1;
/** JSON-RPC error code ACP agents use for "authentication required". */
export const ACP_AUTH_REQUIRED_CODE = -32000;

const Meta = { _meta: z.record(z.string(), z.unknown()).nullish() };

export const AuthMethodSchema = z.looseObject({
  id: z.string().min(1),
  name: z.string().optional(),
  description: z.string().nullish(),
  /** `terminal` methods need an interactive terminal: never selected by us. */
  type: z.string().optional(),
});
export type AuthMethod = z.infer<typeof AuthMethodSchema>;

export const InitializeResponseSchema = z.looseObject({
  protocolVersion: z.number().int(),
  agentCapabilities: z.looseObject({ loadSession: z.boolean().optional() }).optional(),
  authMethods: z.array(AuthMethodSchema).optional(),
  agentInfo: z.looseObject({ name: z.string().optional(), version: z.string().optional() }).nullish(),
});
export type InitializeResponse = z.infer<typeof InitializeResponseSchema>;

export const NewSessionResponseSchema = z.looseObject({
  sessionId: z.string().min(1),
  modes: z.looseObject({ currentModeId: z.string().optional() }).nullish(),
});

/** `null` means the agent does not know the session (Hermes). */
export const LoadSessionResponseSchema = z.looseObject({ modes: z.unknown().optional() }).nullable();

export const StopReasonSchema = z.enum(['end_turn', 'max_tokens', 'max_turn_requests', 'refusal', 'cancelled']);
export type StopReason = z.infer<typeof StopReasonSchema>;

export const AcpUsageSchema = z.looseObject({
  totalTokens: z.number().nonnegative().optional(),
  inputTokens: z.number().nonnegative().optional(),
  outputTokens: z.number().nonnegative().optional(),
  thoughtTokens: z.number().nonnegative().nullish(),
  cachedReadTokens: z.number().nonnegative().nullish(),
  cachedWriteTokens: z.number().nonnegative().nullish(),
});
export type AcpUsage = z.infer<typeof AcpUsageSchema>;

export const PromptResponseSchema = z.looseObject({
  /** Kept as a string: an agent may invent one; the classifier handles the unknown. */
  stopReason: z.string(),
  usage: AcpUsageSchema.nullish(),
});
export type PromptResponse = z.infer<typeof PromptResponseSchema>;

export const ContentBlockSchema = z.looseObject({ type: z.string(), text: z.string().optional() });

export const ToolCallLocationSchema = z.looseObject({ path: z.string(), line: z.number().nullish() });

export const ToolCallFieldsSchema = z.looseObject({
  toolCallId: z.string().min(1),
  title: z.string().nullish(),
  kind: z.string().nullish(),
  status: z.string().nullish(),
  locations: z.array(ToolCallLocationSchema).nullish(),
  rawInput: z.unknown().optional(),
  ...Meta,
});
export type ToolCallFields = z.infer<typeof ToolCallFieldsSchema>;

/** The session/update kinds we translate; anything else is kept as a raw event. */
export const SessionUpdateSchema = z.discriminatedUnion('sessionUpdate', [
  z.looseObject({ sessionUpdate: z.literal('agent_message_chunk'), content: ContentBlockSchema }),
  z.looseObject({ sessionUpdate: z.literal('agent_thought_chunk'), content: ContentBlockSchema }),
  z.looseObject({ sessionUpdate: z.literal('user_message_chunk'), content: ContentBlockSchema }),
  ToolCallFieldsSchema.extend({ sessionUpdate: z.literal('tool_call') }),
  ToolCallFieldsSchema.extend({ sessionUpdate: z.literal('tool_call_update') }),
  z.looseObject({ sessionUpdate: z.literal('plan'), entries: z.array(z.unknown()) }),
  z.looseObject({
    sessionUpdate: z.literal('usage_update'),
    used: z.number(),
    size: z.number(),
    cost: z.looseObject({ amount: z.number(), currency: z.string() }).nullish(),
  }),
  z.looseObject({ sessionUpdate: z.literal('current_mode_update'), currentModeId: z.string() }),
  z.looseObject({ sessionUpdate: z.literal('available_commands_update'), availableCommands: z.array(z.unknown()) }),
]);
export type SessionUpdate = z.infer<typeof SessionUpdateSchema>;

export const SessionUpdateNotificationSchema = z.looseObject({
  sessionId: z.string(),
  update: z.looseObject({ sessionUpdate: z.string() }),
});

export const PermissionOptionSchema = z.looseObject({
  optionId: z.string().min(1),
  name: z.string().optional(),
  /** allow_once | allow_always | reject_once | reject_always (agents may send others). */
  kind: z.string().optional(),
});
export type PermissionOption = z.infer<typeof PermissionOptionSchema>;

export const RequestPermissionRequestSchema = z.looseObject({
  sessionId: z.string(),
  toolCall: ToolCallFieldsSchema,
  options: z.array(PermissionOptionSchema),
});
export type RequestPermissionRequest = z.infer<typeof RequestPermissionRequestSchema>;

/**
 * Our answer, EXACTLY this nested shape: the inner `outcome` is the discriminator in the agent's
 * union. A flat `{outcome: "selected"}` or `allowed`/`denied` is silently read as a deny by Hermes.
 */
export const RequestPermissionResponseSchema = z.strictObject({
  outcome: z.discriminatedUnion('outcome', [
    z.strictObject({ outcome: z.literal('selected'), optionId: z.string().min(1) }),
    z.strictObject({ outcome: z.literal('cancelled') }),
  ]),
});
export type RequestPermissionResponse = z.infer<typeof RequestPermissionResponseSchema>;

/** The answer for a request nobody may grant (no run attached, a cancel): read as a deny. */
export const CANCELLED_ANSWER_WIRE: RequestPermissionResponse = { outcome: { outcome: 'cancelled' } };
