/**
 * The wire of `hermes chat -q <prompt> --format stream-json` (Hermes Agent's
 * `hermes_cli/stream_json.py`, read at b817e728023197716be14fefb0d6241ef2aa6be4):
 * one JSON object per stdout line, diagnostics and `session_id: <id>` on stderr.
 *
 *   {"type":"system","subtype":"init","model":"…","session_id":"20260418_…","timestamp":…}  first
 *   {"type":"text","text":"<delta>"}                 streamed assistant text (concatenate)
 *   {"type":"tool_use","name":"write_file","tool_call_id"?,"input"?:{…}}
 *   {"type":"tool_result","name":"write_file","tool_call_id"?,"output":"…","duration_ms":120,"is_error":false}
 *   {"type":"result","session_id":"…","exit_code":0,"text":"<final response>","duration_ms":…,
 *    "tokens":{"input":5000,"output":200,"total":5200,"cache_read":0,"cache_write":0},
 *    "error"?:"…"}                                                                        last
 *
 * Exactly one `result` ends a run, failures included (exit_code 1, 130 when interrupted), and
 * the process exits with that code. There is no `failed` flag on the wire: the exit code is it.
 * Releases before that commit reported a bare `error` (no `failed`) with exit_code 0, so an
 * `error` counts as a failure too. `tool_call_id` is only present when the agent passes one (the
 * CLI's tool executor does not), so tools pair by name. Without `--format` (older CLIs), `-Q` prints the final
 * response as plain text on stdout and `session_id: <id>` on stderr: no JSON at all.
 */
import { z } from 'zod';

const KNOWN = {
  system: z.looseObject({
    type: z.literal('system'),
    subtype: z.string().optional(),
    model: z.string().optional(),
    session_id: z.string().optional(),
  }),
  text: z.looseObject({ type: z.literal('text'), text: z.string() }),
  tool_use: z.looseObject({
    type: z.literal('tool_use'),
    name: z.string(),
    tool_call_id: z.string().optional(),
    input: z.unknown().optional(),
  }),
  tool_result: z.looseObject({
    type: z.literal('tool_result'),
    name: z.string(),
    tool_call_id: z.string().optional(),
    output: z.string().optional(),
    duration_ms: z.number().optional(),
    is_error: z.boolean().optional(),
  }),
  result: z.looseObject({
    type: z.literal('result'),
    session_id: z.string().optional(),
    exit_code: z.number().int(),
    text: z.string().optional(),
    tokens: z
      .looseObject({
        input: z.number().nonnegative().optional(),
        output: z.number().nonnegative().optional(),
        total: z.number().nonnegative().optional(),
        cache_read: z.number().nonnegative().optional(),
        cache_write: z.number().nonnegative().optional(),
      })
      .optional(),
    duration_ms: z.number().optional(),
    error: z.string().optional(),
  }),
} as const;

const KNOWN_TYPES = new Set<string>(Object.keys(KNOWN));

export const HermesEventSchema = z.discriminatedUnion('type', [
  KNOWN.system,
  KNOWN.text,
  KNOWN.tool_use,
  KNOWN.tool_result,
  KNOWN.result,
]);
export type HermesResult = z.infer<typeof KNOWN.result>;

const UnknownEventSchema = z
  .looseObject({ type: z.string().refine((t) => !KNOWN_TYPES.has(t), 'known type with an invalid shape') })
  .transform((v) => ({ type: 'unknown' as const, raw_type: v.type }));

/** One stdout line in stream-json mode; an unknown type is kept by name, a bad known one fails. */
export const HermesLineSchema = z.union([HermesEventSchema, UnknownEventSchema]);
export type HermesLine = z.infer<typeof HermesLineSchema>;

/** `session_id: <id>` as Hermes prints it on stderr in quiet and stream-json modes. */
export function sessionIdFromStderr(stderr: string): string | null {
  const matches = [...stderr.matchAll(/^session_id:\s*(\S+)\s*$/gm)];
  return matches.at(-1)?.[1] ?? null;
}
