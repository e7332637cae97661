/**
 * A JSON-RPC connection over newline-delimited streams (one JSON message per line), for agents
 * driven over stdio: ACP agents (`jsonrpc2` dialect) and the Codex app-server (`codex` dialect,
 * no `"jsonrpc"` member). See `jsonrpc-message.ts` for the wire.
 *
 * States: open → dead. It dies once, for one reason (`fail(error)`, `close()`, or the input
 * ending), and every pending request is rejected with that reason; later calls reject at once.
 *
 * What it guarantees:
 * - our requests get increasing integer ids and are settled by the response with that id;
 * - a request from the peer goes to `onRequest`; with no handler, or when the handler throws
 *   `JsonRpcRemoteError.methodNotFound`, the peer gets -32601 and the connection goes on;
 * - `$/cancel_request` from the peer aborts the matching handler's signal (answered -32800 when
 *   the handler then throws); our own timed-out or aborted requests send `$/cancel_request` in
 *   the `jsonrpc2` dialect;
 * - a line that is not JSON, not a JSON-RPC message, too long, or a response nobody waits for
 *   is reported through `onDiagnostic` and never kills the connection.
 */
import type { Readable, Writable } from 'node:stream';
import { BoundedLineSplitter, type BoundedLine } from './bounded-lines.js';

/** Default cap on one line: generous for big tool outputs, small enough to bound memory. */
export const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;
import {
  encodeJsonRpc,
  parseJsonRpcLine,
  type JsonRpcDialect,
  type JsonRpcId,
  type OutgoingJsonRpc,
} from './jsonrpc-message.js';
import { JSONRPC_CODES, JsonRpcRemoteError, JsonRpcTransportError } from './jsonrpc-errors.js';

export const CANCEL_REQUEST_METHOD = '$/cancel_request';

export interface JsonRpcRequestContext {
  readonly id: JsonRpcId;
  /** Aborted when the peer sends `$/cancel_request` for this id, or the connection dies. */
  readonly signal: AbortSignal;
}

/** Answers a request from the peer. Return the result; throw `JsonRpcRemoteError` to answer an error. */
export type JsonRpcRequestHandler = (method: string, params: unknown, ctx: JsonRpcRequestContext) => unknown;

export type JsonRpcDiagnostic =
  | { kind: 'non_json'; line: string; reason: string }
  | { kind: 'invalid'; line: string; reason: string }
  | { kind: 'oversized'; bytes: number; head: string }
  | { kind: 'unmatched_response'; id: JsonRpcId | null; line: string }
  | { kind: 'handler_error'; method: string; message: string };

export interface JsonRpcConnectionOptions {
  dialect: JsonRpcDialect;
  onRequest?: JsonRpcRequestHandler;
  /** Must not throw; a throw is reported as a `handler_error` diagnostic. */
  onNotification?: (method: string, params: unknown) => void;
  /** Lines that were not usable messages. Must not throw. */
  onDiagnostic?: (diagnostic: JsonRpcDiagnostic) => void;
  /** Every line written (`out`) or read (`in`), for a protocol trace file. */
  trace?: (direction: 'in' | 'out', line: string) => void;
  maxLineBytes?: number;
  /** Applied to requests that give no `timeoutMs`; none when unset. */
  defaultTimeoutMs?: number;
  /** Send `$/cancel_request` for our timed-out or aborted requests. Default: only in `jsonrpc2`. */
  sendCancelRequests?: boolean;
  /** When false the owner decides when the connection dies after the input ends (to report exit codes). */
  failOnInputEnd?: boolean;
}

export interface JsonRpcRequestOptions {
  timeoutMs?: number;
  /** Aborting rejects the call with kind `cancelled` (and sends `$/cancel_request` where enabled). */
  signal?: AbortSignal;
}

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  cleanup: () => void;
}

const DIAGNOSTIC_LINE_CHARS = 500;
const ABANDONED_KEEP = 256;

export class JsonRpcConnection {
  private nextId = 1;
  private readonly pending = new Map<JsonRpcId, Pending>();
  private readonly incoming = new Map<JsonRpcId, AbortController>();
  /** Ids we gave up on (timeout, abort): their late answers are dropped quietly. */
  private readonly abandoned = new Set<JsonRpcId>();
  private deadReason: JsonRpcTransportError | null = null;
  private readonly splitter: BoundedLineSplitter;
  private resolveClosed!: (reason: JsonRpcTransportError) => void;
  /** Resolves with the reason once the connection is dead. Never rejects. */
  readonly closed: Promise<JsonRpcTransportError>;

  constructor(
    input: Readable,
    private readonly output: Writable,
    private readonly options: JsonRpcConnectionOptions,
  ) {
    this.splitter = new BoundedLineSplitter(options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    input.on('data', (chunk: Buffer | string) => {
      for (const line of this.splitter.push(chunk)) this.onLine(line);
    });
    input.on('end', () => {
      for (const last of this.splitter.end()) this.onLine(last);
      if (options.failOnInputEnd !== false)
        this.fail(new JsonRpcTransportError('exited', 'the peer closed its output'));
    });
    input.on('error', (error) =>
      this.fail(new JsonRpcTransportError('exited', `reading from the peer failed: ${error.message}`)),
    );
    output.on('error', (error) =>
      this.fail(new JsonRpcTransportError('closed', `writing to the peer failed: ${error.message}`)),
    );
  }

  get isOpen(): boolean {
    return this.deadReason === null;
  }

  /** Why the connection died, or null while it is open. */
  get deathReason(): JsonRpcTransportError | null {
    return this.deadReason;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Call a method on the peer; settles with its result, or rejects with a remote or transport error. */
  request(method: string, params?: unknown, options: JsonRpcRequestOptions = {}): Promise<unknown> {
    if (this.deadReason) return Promise.reject(this.deadReason);
    if (options.signal?.aborted)
      return Promise.reject(new JsonRpcTransportError('cancelled', `${method} was cancelled`, { method }));
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? this.options.defaultTimeoutMs;
      const giveUp = (error: JsonRpcTransportError) => {
        if (!this.pending.has(id)) return;
        this.settle(id)?.reject(error);
        this.abandon(id);
      };
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(
              () =>
                giveUp(
                  new JsonRpcTransportError('timeout', `${method} got no answer within ${timeoutMs} ms`, { method }),
                ),
              timeoutMs,
            );
      const onAbort = () => giveUp(new JsonRpcTransportError('cancelled', `${method} was cancelled`, { method }));
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        method,
        resolve,
        reject,
        cleanup: () => {
          if (timer) clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
        },
      });
      this.write(params === undefined ? { id, method } : { id, method, params });
    });
  }

  /** Send a notification. Returns false (and sends nothing) when the connection is dead. */
  notify(method: string, params?: unknown): boolean {
    if (this.deadReason) return false;
    this.write(params === undefined ? { method } : { method, params });
    return true;
  }

  /**
   * Kill the connection for `reason`: every pending request rejects with it, incoming handlers
   * are aborted. Idempotent: the first reason wins.
   */
  fail(reason: JsonRpcTransportError): void {
    if (this.deadReason) return;
    this.deadReason = reason;
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(reason);
    for (const controller of this.incoming.values()) controller.abort(reason);
    this.incoming.clear();
    this.resolveClosed(reason);
  }

  /** Stop: reject what is pending (kind `closed`) and end our output (the peer's stdin). */
  close(message = 'the connection was closed'): void {
    this.fail(new JsonRpcTransportError('closed', message));
    if (!this.output.writableEnded) this.output.end();
  }

  private write(message: OutgoingJsonRpc): void {
    const line = encodeJsonRpc(message, this.options.dialect);
    this.options.trace?.('out', line.slice(0, -1));
    if (this.output.writableEnded || this.output.destroyed) {
      this.fail(new JsonRpcTransportError('closed', 'the peer input is closed'));
      return;
    }
    this.output.write(line);
  }

  private settle(id: JsonRpcId): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    entry.cleanup();
    return entry;
  }

  private abandon(id: JsonRpcId): void {
    this.abandoned.add(id);
    if (this.abandoned.size > ABANDONED_KEEP) this.abandoned.delete(this.abandoned.values().next().value as JsonRpcId);
    if (this.options.sendCancelRequests ?? this.options.dialect === 'jsonrpc2')
      this.notify(CANCEL_REQUEST_METHOD, { requestId: id });
  }

  private diagnose(diagnostic: JsonRpcDiagnostic): void {
    try {
      this.options.onDiagnostic?.(diagnostic);
    } catch {
      // A reporting hook must never take the connection down.
    }
  }

  private onLine(split: BoundedLine): void {
    if (split.kind === 'overflow') {
      this.diagnose({ kind: 'oversized', bytes: split.bytes, head: split.preview.slice(0, 200) });
      return;
    }
    const line = split.text;
    this.options.trace?.('in', line);
    const message = parseJsonRpcLine(line);
    const short = line.slice(0, DIAGNOSTIC_LINE_CHARS);
    switch (message.kind) {
      case 'non_json':
        return this.diagnose({ kind: 'non_json', line: short, reason: message.reason });
      case 'invalid':
        return this.diagnose({ kind: 'invalid', line: short, reason: message.reason });
      case 'result':
      case 'error': {
        const entry = message.id === null ? undefined : this.settle(message.id);
        if (!entry) {
          if (message.id !== null && this.abandoned.delete(message.id)) return;
          return this.diagnose({ kind: 'unmatched_response', id: message.id, line: short });
        }
        if (message.kind === 'result') entry.resolve(message.result);
        else
          entry.reject(
            new JsonRpcRemoteError(message.error.code, message.error.message, message.error.data, entry.method),
          );
        return;
      }
      case 'notification':
        if (message.method === CANCEL_REQUEST_METHOD) return this.onCancelRequest(message.params);
        try {
          this.options.onNotification?.(message.method, message.params);
        } catch (error) {
          this.diagnose({
            kind: 'handler_error',
            method: message.method,
            message: error instanceof Error ? error.message : String(error),
          });
        }
        return;
      case 'request':
        void this.answer(message.id, message.method, message.params);
        return;
    }
  }

  private onCancelRequest(params: unknown): void {
    const id = (params as { requestId?: unknown } | undefined)?.requestId;
    if (typeof id !== 'number' && typeof id !== 'string') return;
    this.incoming.get(id)?.abort(new JsonRpcRemoteError(JSONRPC_CODES.requestCancelled, 'Request cancelled'));
  }

  private async answer(id: JsonRpcId, method: string, params: unknown): Promise<void> {
    const controller = new AbortController();
    this.incoming.set(id, controller);
    let reply: OutgoingJsonRpc;
    try {
      if (!this.options.onRequest) throw JsonRpcRemoteError.methodNotFound(method);
      const result = await this.options.onRequest(method, params, { id, signal: controller.signal });
      reply = { id, result: result === undefined ? null : result };
    } catch (error) {
      if (JsonRpcRemoteError.isInstance(error)) reply = { id, error: error.toObject() };
      else if (controller.signal.aborted && JsonRpcRemoteError.isInstance(controller.signal.reason)) {
        reply = { id, error: controller.signal.reason.toObject() };
      } else {
        const text = error instanceof Error ? error.message : String(error);
        this.diagnose({ kind: 'handler_error', method, message: text });
        reply = { id, error: { code: JSONRPC_CODES.internalError, message: `Internal error: ${text}` } };
      }
    } finally {
      this.incoming.delete(id);
    }
    if (!this.deadReason) this.write(reply);
  }
}
