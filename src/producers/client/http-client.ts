/**
 * The client over the HTTP API (`uh api start`, docs/http-api.md): the documented `/v1` paths,
 * bearer token, `{error: {kind, message, details, hint}}` answers turned back into `UhError`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXIT } from '../../shared/contracts/exit-codes.js';
import { EventSchema, type UhEvent } from '../../shared/contracts/event.js';
import { ReceiptSchema, type Receipt } from '../../shared/contracts/receipt.js';
import { UhError, type UhErrorKind } from '../../shared/errors.js';
import { readSseBatches } from '../../shared/transport/sse.js';
import type { OperationView, Settled, UhClient, WaitOptions } from './client-types.js';
import { makeDir } from '../../shared/fs/make-dir.js';

interface RecordJson {
  operation_id: string;
  state: string;
  status: string | null;
  verdict: string | null;
  exit_code: number | null;
  runtime: string;
}

interface Http {
  base: string;
  token: string | undefined;
}

/** One request; a non-2xx answer becomes the UhError the server described (or one by status). */
async function call(http: Http, method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = {
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(http.token ? { authorization: `Bearer ${http.token}` } : {}),
  };
  let res: Response;
  try {
    res = await fetch(`${http.base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    throw new UhError(
      'runtime_unavailable',
      `cannot reach ${http.base}: ${error instanceof Error ? error.message : String(error)}`,
      { hint: 'is "uh api start" running?', cause: error },
    );
  }
  if (res.ok) return res;
  const text = await res.text();
  let err: { kind?: string; message?: string; details?: string[]; hint?: string | null } = {};
  try {
    err = (JSON.parse(text) as { error?: typeof err }).error ?? {};
  } catch {
    // not our JSON: keep the status line
  }
  const kind = (err.kind ??
    (res.status === 404
      ? 'not_found'
      : res.status === 409
        ? 'conflict'
        : res.status < 500
          ? 'invalid_input'
          : 'internal')) as UhErrorKind;
  throw new UhError(kind, err.message ?? `${method} ${path}: HTTP ${res.status}`, {
    details: err.details ?? [],
    ...(err.hint ? { hint: err.hint } : {}),
  });
}

/** The operation's events from the start; `{end: true}` once the server says it settled. */
async function* events(http: Http, id: string, signal?: AbortSignal): AsyncGenerator<UhEvent | { end: true }> {
  const res = await call(http, 'GET', `/v1/operations/${encodeURIComponent(id)}/events`, undefined, signal);
  if (!res.body) return;
  for await (const batch of readSseBatches(res.body as unknown as AsyncIterable<Uint8Array>, { doneData: null })) {
    for (const item of batch) {
      if (item.type !== 'event') return;
      if (item.event === 'end') return yield { end: true };
      const parsed = EventSchema.safeParse(JSON.parse(item.data));
      if (parsed.success) yield parsed.data;
    }
  }
}

const operationPath = (id: string, tail = '') => `/v1/operations/${encodeURIComponent(id)}${tail}`;

async function attachOver(http: Http, id: string): Promise<OperationView> {
  const { operation: r } = (await (await call(http, 'GET', operationPath(id))).json()) as { operation: RecordJson };
  const { operation_id, state, status, verdict, exit_code, runtime } = r;
  return { operationId: operation_id, state, status, verdict, exitCode: exit_code, runtime };
}

async function receiptOver(http: Http, id: string): Promise<Receipt | null> {
  const { receipt: r } = (await (await call(http, 'GET', operationPath(id))).json()) as { receipt: unknown };
  return r ? ReceiptSchema.parse(r) : null;
}

/** Follow the operation's events until it ends (or the wait times out), then read where it stands. */
async function waitOver(http: Http, id: string, o: WaitOptions = {}): Promise<Settled> {
  const controller = new AbortController();
  const timer = o.timeoutMs === undefined ? undefined : setTimeout(() => controller.abort(), o.timeoutMs);
  o.signal?.addEventListener('abort', () => controller.abort(), { once: true });
  try {
    for await (const e of events(http, id, controller.signal)) if (!('end' in e)) o.onEvent?.(e);
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
  }
  const now = await attachOver(http, id);
  if (now.state === 'finished') {
    const r = await receiptOver(http, id);
    return { operationId: id, state: 'finished', receipt: r, exitCode: r?.exit_code ?? now.exitCode ?? EXIT.failed };
  }
  const state = now.state === 'unknown' ? 'unknown' : 'wait_timed_out';
  return { operationId: id, state, receipt: null, exitCode: EXIT.unknown };
}

const COLLECTED = [
  ['receipt', 'receipt.json'],
  ['diff', 'diff.patch'],
  ['final-message', 'runtime-final.txt'],
] as const;

async function collectOver(http: Http, id: string, dir: string) {
  const r = await receiptOver(http, id);
  if (!r) throw new UhError('not_found', `operation ${id} has no receipt yet`, { hint: 'wait for it first' });
  makeDir(dir);
  const files: string[] = [];
  for (const [path, file] of COLLECTED) {
    const res = await call(http, 'GET', operationPath(id, `/${path}`)).catch((e: unknown) =>
      UhError.isInstance(e) && e.kind === 'not_found' ? null : Promise.reject(e),
    );
    if (!res) continue;
    writeFileSync(join(dir, file), await res.text());
    files.push(join(dir, file));
  }
  return { dir, files, receipt: r };
}

export function httpClient(options: { apiUrl: string; token?: string }): UhClient {
  const http: Http = { base: options.apiUrl.replace(/\/+$/, ''), token: options.token };
  return {
    async submit(mission, o = {}) {
      const query = o.runtime ? `?runtime=${encodeURIComponent(o.runtime)}` : '';
      const res = await call(http, 'POST', `/v1/missions${query}`, mission);
      const body = (await res.json()) as { kind: string; operation: RecordJson };
      const { operation_id, state } = body.operation;
      return { operationId: operation_id, attached: body.kind === 'attached', state };
    },
    attach: (id) => attachOver(http, id),
    wait: (id, o) => waitOver(http, id, o),
    async *watch(id, o = {}) {
      for await (const e of events(http, id, o.signal)) if (!('end' in e)) yield e;
    },
    async cancel(id, reason) {
      const res = await call(http, 'POST', operationPath(id, '/cancel'), reason ? { reason } : {});
      return ((await res.json()) as { outcome: string }).outcome;
    },
    collect: (id, dir) => collectOver(http, id, dir),
    close: async () => undefined,
  };
}
