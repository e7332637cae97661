import { describe, expect, it } from 'vitest';
import {
  encodeJsonRpc,
  parseJsonRpcLine,
  type OutgoingJsonRpc,
} from '../../../src/shared/transport/jsonrpc-message.js';
import { BoundedLineSplitter } from '../../../src/shared/transport/bounded-lines.js';

describe('parseJsonRpcLine', () => {
  it.each([
    [
      'request (jsonrpc2)',
      '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}',
      { kind: 'request', id: 1, method: 'session/new', params: { cwd: '/w' } },
    ],
    [
      'request (codex, no jsonrpc)',
      '{"id":"a","method":"turn/start"}',
      { kind: 'request', id: 'a', method: 'turn/start', params: undefined },
    ],
    [
      'notification',
      '{"jsonrpc":"2.0","method":"session/update","params":{"x":1}}',
      { kind: 'notification', method: 'session/update', params: { x: 1 } },
    ],
    [
      'notification with id null',
      '{"jsonrpc":"2.0","id":null,"method":"m"}',
      { kind: 'notification', method: 'm', params: undefined },
    ],
    ['result', '{"jsonrpc":"2.0","id":7,"result":{"ok":true}}', { kind: 'result', id: 7, result: { ok: true } }],
    ['null result (authenticate)', '{"jsonrpc":"2.0","id":7,"result":null}', { kind: 'result', id: 7, result: null }],
    [
      'error',
      '{"id":3,"error":{"code":-32601,"message":"nope"}}',
      { kind: 'error', id: 3, error: { code: -32601, message: 'nope' } },
    ],
    [
      'error with null id',
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}',
      { kind: 'error', id: null, error: { code: -32700, message: 'parse' } },
    ],
  ])('%s', (_name, line, expected) => {
    expect(parseJsonRpcLine(line)).toEqual(expected);
  });

  it.each([
    ['plain text', 'Loading model...', 'non_json'],
    ['truncated JSON', '{"jsonrpc":"2.0","id":1', 'non_json'],
    ['a number', '42', 'invalid'],
    ['null', 'null', 'invalid'],
    ['a batch', '[{"jsonrpc":"2.0","id":1,"result":1}]', 'invalid'],
    ['wrong version', '{"jsonrpc":"1.0","id":1,"result":1}', 'invalid'],
    ['no method nor result', '{"jsonrpc":"2.0","id":1}', 'invalid'],
    ['error without code', '{"jsonrpc":"2.0","id":1,"error":{"message":"x"}}', 'invalid'],
    ['object id', '{"jsonrpc":"2.0","id":{},"method":"m"}', 'invalid'],
    ['empty method', '{"jsonrpc":"2.0","method":""}', 'invalid'],
  ])('%s is %s', (_name, line, kind) => {
    expect(parseJsonRpcLine(line).kind).toBe(kind);
  });
});

describe('encodeJsonRpc', () => {
  it.each<[string, OutgoingJsonRpc, string, string]>([
    [
      'request',
      { id: 1, method: 'initialize', params: { protocolVersion: 1 } },
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n',
      '{"id":1,"method":"initialize","params":{"protocolVersion":1}}\n',
    ],
    [
      'notification',
      { method: 'session/cancel', params: { sessionId: 's' } },
      '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}\n',
      '{"method":"session/cancel","params":{"sessionId":"s"}}\n',
    ],
    [
      'undefined result becomes null',
      { id: 2, result: undefined },
      '{"jsonrpc":"2.0","id":2,"result":null}\n',
      '{"id":2,"result":null}\n',
    ],
    [
      'error',
      { id: 'x', error: { code: -32601, message: 'Method not found: a' } },
      '{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found: a"}}\n',
      '{"id":"x","error":{"code":-32601,"message":"Method not found: a"}}\n',
    ],
  ])('%s', (_name, message, jsonrpc2, codex) => {
    expect(encodeJsonRpc(message, 'jsonrpc2')).toBe(jsonrpc2);
    expect(encodeJsonRpc(message, 'codex')).toBe(codex);
  });
});

describe('BoundedLineSplitter (NDJSON framing)', () => {
  const texts = (lines: ReturnType<BoundedLineSplitter['push']>) =>
    lines.map((l) => (l.kind === 'line' ? l.text : `<oversized ${l.bytes}>`));

  it.each<[string, string[], string[]]>([
    ['one line per chunk', ['a\n', 'b\n'], ['a', 'b']],
    ['several lines in a chunk', ['a\nb\nc\n'], ['a', 'b', 'c']],
    ['a line across chunks', ['{"a":', '1}\n'], ['{"a":1}']],
    ['CRLF', ['a\r\nb\r\n'], ['a', 'b']],
    ['blank lines skipped', ['\n\n  \na\n'], ['a']],
  ])('%s', (_name, chunks, expected) => {
    const s = new BoundedLineSplitter(1024 * 1024);
    expect(chunks.flatMap((c) => texts(s.push(c)))).toEqual(expected);
  });

  it('keeps a multi-byte character cut across chunks', () => {
    const s = new BoundedLineSplitter(1024 * 1024);
    const bytes = Buffer.from('"héllo ✓"\n');
    const out = [...s.push(bytes.subarray(0, 3)), ...s.push(bytes.subarray(3, 11)), ...s.push(bytes.subarray(11))];
    expect(texts(out)).toEqual(['"héllo ✓"']);
  });

  it('returns the last line without newline at end', () => {
    const s = new BoundedLineSplitter(1024 * 1024);
    expect(texts(s.push('a\nb'))).toEqual(['a']);
    expect(s.end()).toEqual([{ kind: 'line', text: 'b' }]);
  });

  it('rejects an oversized line without buffering it, then goes on', () => {
    const s = new BoundedLineSplitter(10);
    const out = [...s.push('0123456789AB'), ...s.push('CDEF'), ...s.push('GH\nok\n')];
    expect(texts(out)).toEqual(['<oversized 18>', 'ok']);
    expect(out[0]).toMatchObject({ kind: 'overflow', preview: '0123456789AB' });
  });
});
