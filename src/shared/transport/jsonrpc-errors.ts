/**
 * The two errors a JSON-RPC call can end with, recognisable across realms by `Symbol.for` marker
 * or by `name`:
 * - `JsonRpcRemoteError`: the peer answered with an error object (code, message, data), or a
 *   local handler throws one to answer the peer with it.
 * - `JsonRpcTransportError`: no answer will come; `kind` says why (the child exited, the call
 *   timed out or was cancelled, the connection was closed, the program could not start).
 */
import type { JsonRpcErrorObject } from './jsonrpc-message.js';

const REMOTE = Symbol.for('uh.jsonrpc.remote_error');
const TRANSPORT = Symbol.for('uh.jsonrpc.transport_error');

/** Standard JSON-RPC and LSP/ACP codes used by the transport. */
export const JSONRPC_CODES = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** ACP (and LSP): the request was cancelled with `$/cancel_request`. */
  requestCancelled: -32800,
} as const;

export class JsonRpcRemoteError extends Error {
  readonly [REMOTE] = true;
  override readonly name = 'JsonRpcRemoteError';
  constructor(
    readonly code: number,
    /** The error object's own message, as on the wire. */
    readonly rpcMessage: string,
    readonly data?: unknown,
    /** The method of the call this answers, when known (for messages and logs). */
    readonly method?: string,
  ) {
    super(method ? `${method}: ${rpcMessage} (${code})` : `${rpcMessage} (${code})`);
  }

  /** The wire form, for answering a peer. */
  toObject(): JsonRpcErrorObject {
    const message = this.rpcMessage;
    return this.data === undefined ? { code: this.code, message } : { code: this.code, message, data: this.data };
  }

  static methodNotFound(method: string): JsonRpcRemoteError {
    return new JsonRpcRemoteError(JSONRPC_CODES.methodNotFound, `Method not found: ${method}`);
  }

  static isInstance(value: unknown): value is JsonRpcRemoteError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[REMOTE] === true;
  }
}

export type JsonRpcTransportErrorKind =
  /** The peer process exited (or its stdout closed) before answering. */
  | 'exited'
  /** The program could not be started (`ENOENT`, `EACCES`): see `code`. */
  | 'spawn'
  /** The per-request deadline passed. */
  | 'timeout'
  /** The caller's signal aborted the call. */
  | 'cancelled'
  /** `close()` was called, or writing to the peer failed. */
  | 'closed';

export class JsonRpcTransportError extends Error {
  readonly [TRANSPORT] = true;
  override readonly name = 'JsonRpcTransportError';
  constructor(
    readonly kind: JsonRpcTransportErrorKind,
    message: string,
    readonly details: {
      method?: string;
      exitCode?: number | null;
      signal?: string | null;
      code?: string;
      stderrTail?: string;
    } = {},
  ) {
    super(message);
  }

  static isInstance(value: unknown): value is JsonRpcTransportError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[TRANSPORT] === true;
  }
}
