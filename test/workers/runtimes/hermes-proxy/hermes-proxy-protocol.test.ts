import { describe, expect, it } from 'vitest';
import {
  ChatCompletionChunkSchema,
  fastChunk,
  parseErrorEnvelope,
} from '../../../../src/workers/runtimes/hermes-proxy/hermes-proxy-protocol.js';

const choice = (c: Record<string, unknown>) => ({ id: 'c1', choices: [c] });

describe('fastChunk agrees with ChatCompletionChunkSchema', () => {
  it.each([
    ['plain delta', choice({ index: 0, delta: { content: 'hi' }, finish_reason: null })],
    ['role delta', choice({ index: 0, delta: { role: 'assistant' }, finish_reason: null })],
    ['finish frame', choice({ index: 0, delta: {}, finish_reason: 'stop' })],
    ['null content', choice({ index: 0, delta: { content: null } })],
    ['no delta', choice({ index: 0, finish_reason: 'length' })],
    [
      'extra vendor keys',
      { ...choice({ index: 0, delta: { content: 'x', reasoning: 'r' }, logprobs: null }), system_fingerprint: 'fp' },
    ],
    ['numeric content', choice({ index: 0, delta: { content: 5 } })],
    ['array delta', choice({ index: 0, delta: ['x'] })],
    ['string index', choice({ index: '0', delta: { content: 'x' } })],
    ['numeric finish_reason', choice({ delta: { content: 'x' }, finish_reason: 1 })],
    ['numeric id', { id: 7, choices: [{ delta: { content: 'x' } }] }],
    ['choices not an array', { choices: 'nope' }],
    ['usage frame (left to zod)', { id: 'c1', choices: [], usage: { prompt_tokens: 1 } }],
    ['two choices (left to zod)', { choices: [{ delta: { content: 'a' } }, { index: 1, delta: { content: 'b' } }] }],
    ['null', null],
    ['a string', 'data'],
  ])('%s', (_name, frame) => {
    const fast = fastChunk(frame);
    const slow = ChatCompletionChunkSchema.safeParse(frame);
    if (fast !== null) {
      expect(slow.success).toBe(true);
      const pick = (c: unknown) =>
        JSON.parse(JSON.stringify(c, ['id', 'model', 'choices', 'index', 'delta', 'content', 'role', 'finish_reason']));
      expect(pick(fast)).toEqual(pick(slow.data));
    }
  });
});

describe('parseErrorEnvelope', () => {
  it.each([
    ['{"error":{"message":"m","type":"t","code":"c"}}', { message: 'm', type: 't', code: 'c' }],
    ['{"error":{"message":"m"}}', { message: 'm' }],
    ['{"error":"flat string"}', null],
    ['<html>502</html>', null],
    ['', null],
  ])('%s', (text, expected) => {
    const got = parseErrorEnvelope(text);
    if (expected === null) expect(got).toBeNull();
    else expect(got).toMatchObject(expected);
  });
});
