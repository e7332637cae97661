/**
 * The wire of a local `hermes proxy` (Hermes Agent ≥ 0.14; hermes-agent hermes_cli/proxy/server.py
 * at 7d9c6eaf957fdf505790f70ce33a767937960a50): OpenAI Chat Completions over HTTP on
 * `127.0.0.1:8645/v1`. The proxy replaces the client's Authorization with its upstream bearer and
 * streams the upstream's status, headers and body back unmodified.
 *
 *   POST <endpoint>/chat/completions  {model, messages, stream, temperature, max_tokens?, stream_options?}
 *     200 text/event-stream   `data: {chat.completion.chunk}\n\n` … `data: [DONE]\n\n`;
 *                             the last chunk may carry `usage` (with `stream_options.include_usage`)
 *     200 application/json    one `chat.completion` (stream false, or a proxy that does not stream)
 *     4xx/5xx                 `{"error":{"message","type","code"}}` as JSON, even when stream was
 *                             asked for. The proxy's own have type == code: 401
 *                             upstream_auth_failed, 404 path_not_allowed (a /v1 path it does not
 *                             forward), 502 upstream_unreachable, 504 upstream_timeout, 503
 *                             credential_pool_exhausted, 500 proxy_error; the upstream's pass
 *                             through (404 model, 429 + Retry-After, 5xx). Outside /v1 the web
 *                             server answers a plain-text `404: Not Found`; some bodies are not JSON
 *   GET <endpoint>/models             200 `{"object":"list","data":[{"id"}…]}`; 401 when logged out
 *
 * Schemas are lenient about extra keys (the upstream adds vendor fields) and strict about the
 * types of the keys we read.
 */
import { z } from 'zod';

const UsageWire = z.object({
  prompt_tokens: z.number().int().nonnegative().optional(),
  completion_tokens: z.number().int().nonnegative().optional(),
  total_tokens: z.number().int().nonnegative().optional(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int().nonnegative().nullish() }).nullish(),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().int().nonnegative().nullish() }).nullish(),
});
export type UsageWire = z.infer<typeof UsageWire>;

/** The error envelope every failing route answers with. */
export const ErrorEnvelopeSchema = z.object({
  error: z.object({
    message: z.string().default(''),
    type: z.string().nullish(),
    code: z.union([z.string(), z.number()]).nullish(),
  }),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelopeSchema>['error'];

/** One SSE `data:` frame of a streamed completion. */
export const ChatCompletionChunkSchema = z.object({
  id: z.string().optional(),
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        index: z.number().optional(),
        delta: z.object({ content: z.string().nullish(), role: z.string().nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .default([]),
  usage: UsageWire.nullish(),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunkSchema>;

/**
 * The common streamed frame (`{id, choices:[{index, delta:{content|role}, finish_reason}]}`, no
 * usage) read without zod's copy: the hot path on a long stream. Returns null for anything
 * else, which then goes through `ChatCompletionChunkSchema`; for the frames it accepts it agrees
 * with the schema exactly (tested frame by frame).
 */
export function fastChunk(json: unknown): ChatCompletionChunk | null {
  if (typeof json !== 'object' || json === null) return null;
  const frame = json as Record<string, unknown>;
  if (frame.usage !== undefined && frame.usage !== null) return null;
  if (
    (frame.id !== undefined && typeof frame.id !== 'string') ||
    (frame.model !== undefined && typeof frame.model !== 'string')
  )
    return null;
  const choices = frame.choices;
  if (!Array.isArray(choices) || choices.length !== 1) return null;
  const choice = choices[0] as Record<string, unknown> | null;
  if (typeof choice !== 'object' || choice === null || Array.isArray(choice)) return null;
  if (choice.index !== undefined && typeof choice.index !== 'number') return null;
  const finish = choice.finish_reason;
  if (finish !== undefined && finish !== null && typeof finish !== 'string') return null;
  const delta = choice.delta as Record<string, unknown> | null | undefined;
  if (delta !== undefined && delta !== null && (typeof delta !== 'object' || Array.isArray(delta))) return null;
  const content = delta?.content;
  const role = delta?.role;
  if (content !== undefined && content !== null && typeof content !== 'string') return null;
  if (role !== undefined && role !== null && typeof role !== 'string') return null;
  return frame as ChatCompletionChunk;
}

/** A non-streamed completion. */
export const ChatCompletionSchema = z.object({
  id: z.string().optional(),
  model: z.string().optional(),
  choices: z
    .array(
      z.object({
        index: z.number().optional(),
        message: z.object({ content: z.string().nullish(), role: z.string().nullish() }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .default([]),
  usage: UsageWire.nullish(),
});
export type ChatCompletion = z.infer<typeof ChatCompletionSchema>;

/** `GET /models`. */
export const ModelListSchema = z.object({
  data: z.array(z.object({ id: z.string() })),
});

/** The request body (what `describe` shows and what is POSTed). */
export interface ChatCompletionRequest {
  model: string;
  messages: Array<{ role: 'system' | 'user'; content: string }>;
  stream: boolean;
  temperature: number;
  max_tokens?: number;
  stream_options?: { include_usage: true };
}

/** A JSON body's error envelope, or null when the body is not one. */
export function parseErrorEnvelope(text: string): ErrorEnvelope | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = ErrorEnvelopeSchema.safeParse(json);
  return parsed.success ? parsed.data.error : null;
}
