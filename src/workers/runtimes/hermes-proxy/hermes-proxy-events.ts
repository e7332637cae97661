/**
 * Pure translation between the proxy's OpenAI-compatible wire and the shared runtime events:
 * the request body, frames → text/usage/finish facts, Retry-After. No I/O.
 */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  ErrorEnvelopeSchema,
  fastChunk,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionRequest,
  type ErrorEnvelope,
  type UsageWire,
} from './hermes-proxy-protocol.js';
import type { HermesProxySettings } from './hermes-proxy-settings.js';

/** The body POSTed to `<endpoint>/chat/completions`. */
export function buildRequestBody(config: HermesProxySettings, prompt: string): ChatCompletionRequest {
  const messages: ChatCompletionRequest['messages'] = [];
  if (config.system_prompt !== undefined) messages.push({ role: 'system', content: config.system_prompt });
  messages.push({ role: 'user', content: prompt });
  const body: ChatCompletionRequest = {
    model: config.model,
    messages,
    stream: config.stream,
    temperature: config.temperature,
  };
  if (config.max_tokens !== undefined) body.max_tokens = config.max_tokens;
  // Without this OpenAI-compatible servers send no usage on a streamed reply.
  if (config.stream) body.stream_options = { include_usage: true };
  return body;
}

/** OpenAI usage → ours. Undefined when the wire carried none. */
export function usageFromWire(wire: UsageWire | null | undefined): Usage | undefined {
  if (!wire) return undefined;
  const usage: Usage = {};
  if (wire.prompt_tokens !== undefined) usage.input_tokens = wire.prompt_tokens;
  if (wire.completion_tokens !== undefined) usage.output_tokens = wire.completion_tokens;
  if (wire.total_tokens !== undefined) usage.total_tokens = wire.total_tokens;
  const cached = wire.prompt_tokens_details?.cached_tokens;
  if (cached !== undefined && cached !== null) usage.cached_input_tokens = cached;
  const reasoning = wire.completion_tokens_details?.reasoning_tokens;
  if (reasoning !== undefined && reasoning !== null) usage.reasoning_tokens = reasoning;
  return Object.keys(usage).length > 0 ? usage : undefined;
}

/** What one chunk contributes: its text, finish reason, usage and response id. */
export interface ChunkFacts {
  text: string;
  finishReason: string | null;
  usage: Usage | undefined;
  id: string | undefined;
}

export function factsOfChunk(chunk: ChatCompletionChunk): ChunkFacts {
  let text = '';
  let finishReason: string | null = null;
  for (const choice of chunk.choices) {
    if ((choice.index ?? 0) !== 0) continue; // we ask for one choice; ignore any others
    const content = choice.delta?.content;
    if (typeof content === 'string') text += content;
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  return { text, finishReason, usage: usageFromWire(chunk.usage), id: chunk.id };
}

export function factsOfCompletion(completion: ChatCompletion): ChunkFacts {
  const choice = completion.choices.find((c) => (c.index ?? 0) === 0);
  return {
    text: choice?.message?.content ?? '',
    finishReason: choice?.finish_reason ?? null,
    usage: usageFromWire(completion.usage),
    id: completion.id,
  };
}

/** Assistant text as it arrives. */
export function messageEvent(text: string): RuntimeEventV1 {
  return { type: 'runtime.message', data: { text, role: 'assistant' } };
}

/** The final usage report (replaces, not adds). */
export function usageEvent(usage: Usage): RuntimeEventV1 {
  return { type: 'runtime.usage', data: { ...usage, cumulative: true } };
}

/** What one `data:` frame (or a whole JSON body) is. */
export type Frame =
  { kind: 'chunk'; facts: ChunkFacts } | { kind: 'error'; envelope: ErrorEnvelope } | { kind: 'bad'; reason: string };

/**
 * One SSE data frame (or, with `whole`, a JSON body) → chunk facts, an error envelope, or why it
 * is neither. Validated with the zod schemas (common frames through `fastChunk`). Pure.
 */
export function parseFrame(data: string, whole = false): Frame {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return { kind: 'bad', reason: 'invalid_json' };
  }
  if (json !== null && typeof json === 'object' && 'error' in json) {
    const env = ErrorEnvelopeSchema.safeParse(json);
    if (env.success) return { kind: 'error', envelope: env.data.error };
  }
  if (whole) {
    const completion = ChatCompletionSchema.safeParse(json);
    return completion.success
      ? { kind: 'chunk', facts: factsOfCompletion(completion.data) }
      : { kind: 'bad', reason: 'unexpected_shape' };
  }
  const fast = fastChunk(json);
  if (fast) return { kind: 'chunk', facts: factsOfChunk(fast) };
  const chunk = ChatCompletionChunkSchema.safeParse(json);
  return chunk.success
    ? { kind: 'chunk', facts: factsOfChunk(chunk.data) }
    : { kind: 'bad', reason: 'unexpected_shape' };
}
