/**
 * The wire of `pi --print --mode json --no-session` (and oh-my-pi's `omp`, same JSON mode), as
 * read from @mariozechner/pi-coding-agent 0.73 (`dist/modes/print-mode.js`, `docs/json.md`):
 * one JSON object per stdout line.
 *
 *   {"type":"session","version":3,"id":"<uuid>","timestamp":"…","cwd":"/work"}   first line (header)
 *   {"type":"agent_start"}  {"type":"turn_start"}
 *   {"type":"message_start"|"message_update"|"message_end","message":{role,content[],usage,stopReason,errorMessage}}
 *      message_update also carries `assistantMessageEvent` (text_delta, toolcall_delta…) and the
 *      whole partial message each time: we never keep it.
 *   {"type":"tool_execution_start","toolCallId","toolName","args"}
 *   {"type":"tool_execution_update",…}  {"type":"tool_execution_end","toolCallId","toolName","result","isError"}
 *   {"type":"turn_end","message",…}  {"type":"auto_retry_start"|"auto_retry_end",…}
 *   {"type":"compaction_start"|"compaction_end",…}  {"type":"queue_update",…}
 *   {"type":"agent_end","messages":[…]}                                          last event
 *
 * Assistant content blocks: `{type:"text",text}`, `{type:"thinking",thinking}`,
 * `{type:"toolCall",id,name,arguments}`. Usage: `{input,output,cacheRead,cacheWrite,totalTokens,
 * cost:{total}}`. A provider failure is NOT a non-zero exit in JSON mode: the last assistant
 * message ends with `stopReason:"error"` and an `errorMessage` such as `401 Incorrect API key`,
 * and pi exits 0. Startup failures (no API key) print to stderr and exit 1.
 *
 * oh-my-pi (`omp`, @oh-my-pi/pi-coding-agent 18.x, read from its `src/modes/print-mode.ts`) prints
 * the same header and events, drops the `partial` snapshot from `message_update`, exits 1 on a
 * terminal `stopReason` error/aborted, and adds event types of its own (`notice`, `tool_call`,
 * `auto_compaction_*`, `model_changed`…). Unknown event types are accepted as `{type:"unknown"}`
 * (reported once per type) so a newer CLI never breaks a run.
 */
import { z } from 'zod';

export const PiUsageSchema = z.looseObject({
  input: z.number().nonnegative().optional(),
  output: z.number().nonnegative().optional(),
  cacheRead: z.number().nonnegative().optional(),
  cacheWrite: z.number().nonnegative().optional(),
  totalTokens: z.number().nonnegative().optional(),
  cost: z.looseObject({ total: z.number().nonnegative().optional() }).optional(),
});
export type PiUsage = z.infer<typeof PiUsageSchema>;

export const PiContentBlockSchema = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  thinking: z.string().optional(),
  id: z.string().optional(),
  name: z.string().optional(),
});

export const PiMessageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(PiContentBlockSchema)]).optional(),
  stopReason: z.string().optional(),
  errorMessage: z.string().optional(),
  usage: PiUsageSchema.optional(),
  model: z.string().optional(),
  provider: z.string().optional(),
});
export type PiMessage = z.infer<typeof PiMessageSchema>;

const KNOWN = {
  session: z.looseObject({
    type: z.literal('session'),
    id: z.string(),
    version: z.number().optional(),
    cwd: z.string().optional(),
  }),
  agent_start: z.looseObject({ type: z.literal('agent_start') }),
  agent_end: z.looseObject({ type: z.literal('agent_end'), messages: z.array(PiMessageSchema) }),
  turn_start: z.looseObject({ type: z.literal('turn_start') }),
  turn_end: z.looseObject({ type: z.literal('turn_end') }),
  message_start: z.looseObject({ type: z.literal('message_start') }),
  // The partial message is repeated on every delta: it is not validated nor kept.
  message_update: z.looseObject({ type: z.literal('message_update') }),
  message_end: z.looseObject({ type: z.literal('message_end'), message: PiMessageSchema }),
  tool_execution_start: z.looseObject({
    type: z.literal('tool_execution_start'),
    toolCallId: z.string(),
    toolName: z.string(),
    args: z.unknown().optional(),
  }),
  tool_execution_update: z.looseObject({ type: z.literal('tool_execution_update') }),
  tool_execution_end: z.looseObject({
    type: z.literal('tool_execution_end'),
    toolCallId: z.string(),
    toolName: z.string(),
    result: z.unknown().optional(),
    isError: z.boolean().optional(),
  }),
  auto_retry_start: z.looseObject({
    type: z.literal('auto_retry_start'),
    attempt: z.number().optional(),
    maxAttempts: z.number().optional(),
    delayMs: z.number().optional(),
    errorMessage: z.string().optional(),
  }),
  auto_retry_end: z.looseObject({
    type: z.literal('auto_retry_end'),
    success: z.boolean().optional(),
    attempt: z.number().optional(),
    finalError: z.string().optional(),
  }),
  compaction_start: z.looseObject({ type: z.literal('compaction_start'), reason: z.string().optional() }),
  compaction_end: z.looseObject({
    type: z.literal('compaction_end'),
    reason: z.string().optional(),
    aborted: z.boolean().optional(),
    errorMessage: z.string().optional(),
  }),
  queue_update: z.looseObject({ type: z.literal('queue_update') }),
} as const;

const KNOWN_TYPES = new Set<string>(Object.keys(KNOWN));

export const PiEventSchema = z.discriminatedUnion('type', [
  KNOWN.session,
  KNOWN.agent_start,
  KNOWN.agent_end,
  KNOWN.turn_start,
  KNOWN.turn_end,
  KNOWN.message_start,
  KNOWN.message_update,
  KNOWN.message_end,
  KNOWN.tool_execution_start,
  KNOWN.tool_execution_update,
  KNOWN.tool_execution_end,
  KNOWN.auto_retry_start,
  KNOWN.auto_retry_end,
  KNOWN.compaction_start,
  KNOWN.compaction_end,
  KNOWN.queue_update,
]);

/** An event type this adapter does not know (a newer CLI): kept as a name only. */
const UnknownEventSchema = z
  .looseObject({ type: z.string().refine((t) => !KNOWN_TYPES.has(t), 'known type with an invalid shape') })
  .transform((v) => ({ type: 'unknown' as const, raw_type: v.type }));

/** One stdout line of pi's JSON mode. A known type with a wrong shape fails (→ `runtime.raw`). */
export const PiLineSchema = z.union([PiEventSchema, UnknownEventSchema]);
export type PiLine = z.infer<typeof PiLineSchema>;
