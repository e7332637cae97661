import { z } from 'zod';
import { RuntimeStatusSchema } from './status.js';

export const UsageSchema = z.lazy(() =>
  z.strictObject({
    input_tokens: z.number().int().nonnegative().optional(),
    cached_input_tokens: z.number().int().nonnegative().optional(),
    output_tokens: z.number().int().nonnegative().optional(),
    reasoning_tokens: z.number().int().nonnegative().optional(),
    total_tokens: z.number().int().nonnegative().optional(),
    cost_usd: z.number().nonnegative().optional(),
  }),
);
export type Usage = z.infer<typeof UsageSchema>;

/** The portable status plus the runtime-native reason it came from (`{unified, raw}`). */
export const OutcomeSchema = z.lazy(() =>
  z.strictObject({
    status: RuntimeStatusSchema,
    /** Runtime-native reason: `exit:1`, `http:429`, `turn.failed`, `signal:SIGKILL`, `timeout`… */
    raw: z.string(),
    /** One human sentence. */
    message: z.string(),
    /** The operator's next step when the status is blocked or failed for a fixable reason. */
    hint: z.string().optional(),
    timed_out: z.boolean(),
    exit_code: z.number().int().nullable().optional(),
    signal: z.string().nullable().optional(),
    /** For rate limits: when a retry may go, in ms from the end of the run. */
    retry_after_ms: z.number().int().nonnegative().optional(),
  }),
);
export type Outcome = z.infer<typeof OutcomeSchema>;

/** Which runtime ran, and the ids it gave the session (all null when it never started). */
export const RuntimeIdentitySchema = z.lazy(() =>
  z.strictObject({
    adapter_id: z.string(),
    runtime_kind: z.string(),
    session_id: z.string().nullable(),
    thread_id: z.string().nullable(),
    turn_id: z.string().nullable(),
    /** The model: as the runtime reported it, else its `runtime_config.model`; absent when neither says. */
    model: z.string().max(128).optional(),
    /** The runtime's own version as it reported it (a usage report's `version`); absent when it did not. */
    version: z.string().max(64).optional(),
  }),
);

/** `uh.runtime-result.v0`: what one runtime execution produced, folded from its events. */
export const RuntimeResultSchema = z.lazy(() =>
  z.strictObject({
    schema_version: z.literal('uh.runtime-result.v0'),
    mission_id: z.string(),
    operation_id: z.string(),
    runtime: RuntimeIdentitySchema,
    outcome: OutcomeSchema,
    status: RuntimeStatusSchema,
    summary: z.string(),
    final_message: z.string(),
    final_message_source: z.enum(['sentinel', 'native', 'none']),
    usage: UsageSchema,
    tool_calls: z.number().int().nonnegative(),
    messages: z.number().int().nonnegative(),
    duration_ms: z.number().int().nonnegative(),
    logs: z.array(z.string()),
  }),
);
export type RuntimeResult = z.infer<typeof RuntimeResultSchema>;
