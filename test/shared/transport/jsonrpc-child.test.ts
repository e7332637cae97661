import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnGroup } from '../../../src/shared/process/spawn-group.js';
import {
  startJsonRpcChild,
  type JsonRpcChild,
  type JsonRpcChildOptions,
} from '../../../src/shared/transport/jsonrpc-child.js';
import { JsonRpcRemoteError, JsonRpcTransportError } from '../../../src/shared/transport/jsonrpc-errors.js';
import type { JsonRpcDiagnostic } from '../../../src/shared/transport/jsonrpc-ndjson.js';
import { tempDir } from '../../support/temp.js';

const PEER = fileURLToPath(new URL('../../fixtures/bin/jsonrpc-peer.mjs', import.meta.url));
const children: JsonRpcChild[] = [];

function start(flags: string[] = [], options: Partial<JsonRpcChildOptions> = {}): JsonRpcChild {
  const child = startJsonRpcChild({
    spawn: spawnGroup,
    argv: [process.execPath, PEER, ...flags],
    cwd: process.cwd(),
    env: process.env,
    dialect: 'jsonrpc2',
    ...options,
  });
  children.push(child);
  return child;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.close()));
});

describe('JSON-RPC over NDJSON stdio (against a peer process)', () => {
  it('correlates concurrent requests by id', async () => {
    const { connection } = start();
    const [a, b, c] = await Promise.all([
      connection.request('slow', { ms: 150 }),
      connection.request('echo', { n: 2 }),
      connection.request('echo', { n: 3 }),
    ]);
    expect(a).toEqual({ slept: 150 });
    expect(b).toEqual({ method: 'echo', params: { n: 2 } });
    expect(c).toEqual({ method: 'echo', params: { n: 3 } });
  });

  it('rejects with the remote error for an error response and keeps going', async () => {
    const { connection } = start();
    const error = await rejection(connection.request('no/such'));
    expect(JsonRpcRemoteError.isInstance(error)).toBe(true);
    expect((error as JsonRpcRemoteError).code).toBe(-32601);
    expect(await connection.request('echo', {})).toMatchObject({ method: 'echo' });
  });

  it('answers server-to-client requests through the handler, unknown ones with -32601, and keeps going', async () => {
    const { connection } = start([], {
      onRequest: (method, params) => {
        if (method === 'fs/read') return { content: `read ${(params as { path: string }).path}` };
        if (method === 'boom') throw new Error('handler broke');
        if (method === 'null') return undefined;
        throw JsonRpcRemoteError.methodNotFound(method);
      },
    });
    expect(await connection.request('call', { method: 'fs/read', params: { path: 'a.txt' } })).toEqual({
      answer: { content: 'read a.txt' },
    });
    expect(await connection.request('call', { method: 'vendor/_x', params: {} })).toEqual({
      error: { code: -32601, message: 'Method not found: vendor/_x' },
    });
    expect(await connection.request('call', { method: 'boom' })).toEqual({
      error: { code: -32603, message: 'Internal error: handler broke' },
    });
    expect(await connection.request('call', { method: 'null' })).toEqual({ answer: null });
    expect(await connection.request('echo', { still: 'alive' })).toMatchObject({ params: { still: 'alive' } });
  });

  it('answers every server request with -32601 when there is no handler', async () => {
    const { connection } = start();
    expect(await connection.request('call', { method: 'session/request_permission' })).toMatchObject({
      error: { code: -32601 },
    });
  });

  it('delivers notifications both ways', async () => {
    const seen: unknown[] = [];
    const { connection } = start([], { onNotification: (method, params) => seen.push({ method, params }) });
    await connection.request('notify', { method: 'session/update', params: { n: 1 } });
    expect(seen).toEqual([{ method: 'session/update', params: { n: 1 } }]);
    expect(connection.notify('session/cancel', { sessionId: 's1' })).toBe(true);
    const log = (await connection.request('log')) as { notifications: unknown[]; violations: string[] };
    expect(log.notifications).toEqual([{ method: 'session/cancel', params: { sessionId: 's1' } }]);
    expect(log.violations).toEqual([]);
  });

  it('speaks the codex dialect: no "jsonrpc" member on anything it writes', async () => {
    const { connection } = start(['--dialect', 'codex'], { dialect: 'codex', onRequest: () => ({ ok: 1 }) });
    await connection.request('echo', { a: 1 });
    connection.notify('initialized');
    expect(await connection.request('call', { method: 'item/approve' })).toEqual({ answer: { ok: 1 } });
    const log = (await connection.request('log')) as { violations: string[] };
    expect(log.violations).toEqual([]);
  });

  it('reports non-JSON lines, non-messages and stray responses without dying', async () => {
    const diagnostics: JsonRpcDiagnostic[] = [];
    const { connection } = start([], { onDiagnostic: (d) => diagnostics.push(d) });
    await connection.request('garbage');
    expect(diagnostics.map((d) => d.kind)).toEqual(['non_json', 'invalid', 'unmatched_response']);
    expect(diagnostics[0]).toMatchObject({ line: 'Loading model weights... 42%' });
    expect(connection.isOpen).toBe(true);
  });

  it('rejects an oversized line and keeps reading', async () => {
    const diagnostics: JsonRpcDiagnostic[] = [];
    const { connection } = start([], { onDiagnostic: (d) => diagnostics.push(d), maxLineBytes: 64 * 1024 });
    await connection.request('big', { bytes: 300_000 });
    expect(diagnostics).toEqual([expect.objectContaining({ kind: 'oversized', bytes: 300_000 })]);
    expect(await connection.request('echo', {})).toMatchObject({ method: 'echo' });
  });

  it('times out one request, sends $/cancel_request for it, and keeps the rest going', async () => {
    const { connection } = start();
    const error = await rejection(connection.request('slow', { ms: 30_000 }, { timeoutMs: 100 }));
    expect(JsonRpcTransportError.isInstance(error) && error.kind).toBe('timeout');
    const log = (await connection.request('log')) as { cancels: number[] };
    expect(log.cancels).toEqual([1]);
    expect(connection.pendingCount).toBe(0);
  });

  it('cancels a request by signal with $/cancel_request (jsonrpc2 dialect only)', async () => {
    const { connection } = start();
    const controller = new AbortController();
    const call = connection.request('never', {}, { signal: controller.signal });
    controller.abort();
    const error = await rejection(call);
    expect(JsonRpcTransportError.isInstance(error) && error.kind).toBe('cancelled');
    expect(((await connection.request('log')) as { cancels: number[] }).cancels).toEqual([1]);

    const codex = start(['--dialect', 'codex'], { dialect: 'codex' }).connection;
    const c2 = new AbortController();
    const call2 = codex.request('never', {}, { signal: c2.signal });
    c2.abort();
    await rejection(call2);
    expect(((await codex.request('log')) as { cancels: number[] }).cancels).toEqual([]);
  });

  it('aborts a handler when the peer sends $/cancel_request and answers -32800', async () => {
    const { connection } = start([], {
      onRequest: (_method, _params, ctx) =>
        new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted')))),
    });
    expect(await connection.request('call-then-cancel', { method: 'session/request_permission' })).toEqual({
      error: { code: -32800, message: 'Request cancelled' },
    });
  });

  it('aborts pending handlers when the connection closes', async () => {
    let aborted: Promise<void> | undefined;
    const { connection } = start([], {
      onRequest: (_method, _params, ctx) => {
        aborted = new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        return new Promise(() => {});
      },
    });
    const call = connection.request('call', { method: 'wait' });
    await expect.poll(() => aborted !== undefined).toBe(true);
    connection.close();
    await rejection(call);
    await aborted;
  });

  it('rejects every pending request with a typed error when the child exits, with its stderr', async () => {
    const child = start();
    const pending = [child.connection.request('never'), child.connection.request('slow', { ms: 60_000 })];
    const exit = child.connection.request('exit', { code: 3, stderr: 'fatal: model not configured' });
    const errors = await Promise.all([...pending, exit].map(rejection));
    for (const error of errors) {
      expect(JsonRpcTransportError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ kind: 'exited', details: { exitCode: 3 } });
      expect((error as Error).message).toContain('fatal: model not configured');
    }
    const later = await rejection(child.connection.request('echo'));
    expect(later).toBe(errors[0]);
    expect((await child.exited).exitCode).toBe(3);
  });

  it('reports a child that dies at start, and a missing program as kind spawn', async () => {
    const crash = start(['--crash-on-start']);
    const error = await rejection(crash.connection.request('initialize'));
    expect(error).toMatchObject({ kind: 'exited', details: { exitCode: 2 } });
    expect((error as Error).message).toContain('cannot find config');

    const missing = startJsonRpcChild({
      spawn: spawnGroup,
      argv: ['uh-no-such-agent-xyz'],
      cwd: process.cwd(),
      env: process.env,
      dialect: 'jsonrpc2',
    });
    children.push(missing);
    const spawnError = await rejection(missing.connection.request('initialize'));
    expect(spawnError).toMatchObject({ kind: 'spawn', details: { code: 'ENOENT' } });
  });

  it('close ends stdin and the child leaves by itself', async () => {
    const child = start();
    await child.connection.request('echo');
    const result = await child.close();
    expect(result).toMatchObject({ exitCode: 0, signal: null });
  });

  it('close escalates to SIGTERM, then SIGKILL', async () => {
    const lingering = start(['--linger'], { closeGraceMs: 100 });
    await lingering.connection.request('echo');
    expect((await lingering.close()).signal).toBe('SIGTERM');

    const stubborn = start(['--ignore-sigterm'], { closeGraceMs: 100, killGraceMs: 200 });
    await stubborn.connection.request('echo');
    expect((await stubborn.close()).signal).toBe('SIGKILL');
  });

  it('writes stderr to the given file and traces lines both ways', async () => {
    const dir = tempDir('uh-jsonrpc-');
    const trace: string[] = [];
    const child = start([], {
      stderrFile: join(dir, 'stderr.log'),
      trace: (dir2, line) => trace.push(`${dir2} ${line}`),
    });
    await rejection(child.connection.request('exit', { code: 1, stderr: 'bye' }));
    expect(readFileSync(join(dir, 'stderr.log'), 'utf8')).toBe('bye\n');
    expect(trace[0]).toBe('out {"jsonrpc":"2.0","id":1,"method":"exit","params":{"code":1,"stderr":"bye"}}');
  });
});
