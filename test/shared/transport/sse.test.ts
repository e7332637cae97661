import { describe, expect, it } from 'vitest';
import { readSse, readSseBatches, type SseItem } from '../../../src/shared/transport/sse.js';

const enc = new TextEncoder();

async function* bytes(parts: Array<string | Uint8Array>, failWith?: Error): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield typeof p === 'string' ? enc.encode(p) : p;
  if (failWith) throw failWith;
}

async function collect(parts: Array<string | Uint8Array>, failWith?: Error): Promise<SseItem[]> {
  const items: SseItem[] = [];
  for await (const item of readSse(bytes(parts, failWith))) items.push(item);
  return items;
}

/** Every way of cutting `text` into two chunks, at each byte. */
function everySplit(text: string): Uint8Array[][] {
  const all = enc.encode(text);
  const out: Uint8Array[][] = [];
  for (let i = 0; i <= all.length; i++) out.push([all.subarray(0, i), all.subarray(i)]);
  return out;
}

describe('readSse', () => {
  it.each([
    ['one event', ['data: {"a":1}\n\n'], [{ type: 'event', data: '{"a":1}' }]],
    [
      'comments and keep-alives are skipped',
      [': keep-alive\n\n', ':\n\n', 'data: x\n\n'],
      [{ type: 'event', data: 'x' }],
    ],
    ['multi-line data is joined with \\n', ['data: {"a":\ndata: 1}\n\n'], [{ type: 'event', data: '{"a":\n1}' }]],
    [
      'event name and id are kept',
      ['event: delta\nid: 7\ndata: y\n\n'],
      [{ type: 'event', data: 'y', event: 'delta', id: '7' }],
    ],
    [
      'CRLF line endings',
      ['data: a\r\n\r\ndata: b\r\n\r\n'],
      [
        { type: 'event', data: 'a' },
        { type: 'event', data: 'b' },
      ],
    ],
    [
      '[DONE] ends the stream; nothing after it is read',
      ['data: a\n\ndata: [DONE]\n\ndata: late\n\n'],
      [{ type: 'event', data: 'a' }, { type: 'done' }],
    ],
    ['an event cut by the end of the stream is dropped', ['data: a\n\ndata: {"cut'], [{ type: 'event', data: 'a' }]],
    ['a stream that ends before [DONE] just ends', ['data: a\n\n'], [{ type: 'event', data: 'a' }]],
    [
      'unknown fields and a bad retry are tolerated',
      ['foo: bar\nretry: soon\ndata: z\n\n'],
      [{ type: 'event', data: 'z' }],
    ],
    ['a byte-order mark is ignored', ['\uFEFFdata: bom\n\n'], [{ type: 'event', data: 'bom' }]],
    ['an empty body yields nothing', [], []],
  ] as Array<[string, string[], SseItem[]]>)('%s', async (_name, parts, expected) => {
    expect(await collect(parts)).toEqual(expected);
  });

  it('reassembles frames and multi-byte characters split at every byte', async () => {
    const text = 'data: {"t":"café ✓ 🙂"}\n\n: ping\n\ndata: [DONE]\n\n';
    for (const parts of everySplit(text)) {
      expect(await collect(parts)).toEqual([{ type: 'event', data: '{"t":"café ✓ 🙂"}' }, { type: 'done' }]);
    }
  });

  it('turns a broken transport into a final error item and never throws', async () => {
    const items = await collect(['data: a\n\ndata: {"par'], new Error('other side closed'));
    expect(items).toEqual([
      { type: 'event', data: 'a' },
      { type: 'error', phase: 'transport', error: new Error('other side closed') },
    ]);
  });

  it('gives up with a parse error on a line longer than the buffer cap', async () => {
    const items: SseItem[] = [];
    for await (const item of readSse(bytes(['data: ' + 'x'.repeat(2000)]), { maxBufferChars: 1000 })) items.push(item);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ type: 'error', phase: 'parse' });
  });

  it('batches the items of one chunk together and stops reading after [DONE]', async () => {
    let pulled = 0;
    async function* source(): AsyncGenerator<Uint8Array> {
      for (const p of ['data: a\n\ndata: b\n\n', 'data: [DONE]\n\n', 'data: never\n\n']) {
        pulled += 1;
        yield enc.encode(p);
      }
    }
    const batches: SseItem[][] = [];
    for await (const batch of readSseBatches(source())) batches.push(batch);
    expect(batches).toEqual([
      [
        { type: 'event', data: 'a' },
        { type: 'event', data: 'b' },
      ],
      [{ type: 'done' }],
    ]);
    expect(pulled).toBe(2);
  });

  it('honours a custom done marker or none', async () => {
    const none: SseItem[] = [];
    for await (const item of readSse(bytes(['data: [DONE]\n\n']), { doneData: null })) none.push(item);
    expect(none).toEqual([{ type: 'event', data: '[DONE]' }]);
  });
});
