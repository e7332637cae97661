/** Small pure helpers of the ACP run: error → failure, usage mapping, client notices → events. */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import type { RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { JsonRpcRemoteError, JsonRpcTransportError } from '../../../shared/transport/jsonrpc-errors.js';
import type { AcpClientNotice } from './acp-client.js';
import { AcpProtocolError } from './acp-protocol-error.js';
import { ACP_AUTH_REQUIRED_CODE, type AcpUsage } from './acp-protocol.js';
import type { AcpFailure } from './classify-acp.js';

/** The agent needs a login we cannot do (no usable method, or it refused ours). */
export class AuthRequiredError extends Error {
  override readonly name = 'AuthRequiredError';
}

export function toFailure(error: unknown): AcpFailure {
  if (error instanceof AuthRequiredError) return { kind: 'auth_required', message: error.message };
  if (JsonRpcTransportError.isInstance(error)) {
    const d = error.details;
    switch (error.kind) {
      case 'spawn':
        return { kind: 'spawn', code: d.code ?? 'ESPAWN', message: error.message };
      case 'timeout':
        return { kind: 'request_timeout', method: d.method ?? 'request', message: error.message };
      case 'exited':
        return { kind: 'exited', message: error.message, exitCode: d.exitCode ?? null, signal: d.signal ?? null };
      case 'cancelled':
      case 'closed':
        return { kind: 'protocol', message: error.message };
    }
  }
  if (JsonRpcRemoteError.isInstance(error)) {
    if (error.code === ACP_AUTH_REQUIRED_CODE) return { kind: 'auth_required', message: error.message };
    return { kind: 'remote', method: error.method ?? 'request', code: error.code, message: error.rpcMessage };
  }
  if (AcpProtocolError.isInstance(error)) return { kind: 'protocol', message: error.message };
  return { kind: 'protocol', message: error instanceof Error ? error.message : String(error) };
}

/** ACP `PromptResponse.usage` → our usage (null when the agent reported none). */
export function usageOf(usage: AcpUsage | null | undefined): Usage | null {
  if (!usage) return null;
  const out: Usage = {};
  const set = (key: keyof Usage, value: number | null | undefined) => {
    if (typeof value === 'number' && Number.isFinite(value)) out[key] = Math.round(value);
  };
  set('input_tokens', usage.inputTokens);
  set('output_tokens', usage.outputTokens);
  set('total_tokens', usage.totalTokens);
  set('reasoning_tokens', usage.thoughtTokens);
  set('cached_input_tokens', usage.cachedReadTokens);
  return Object.keys(out).length ? out : null;
}

export function noticeEvent(notice: AcpClientNotice): RuntimeEventV1 {
  switch (notice.kind) {
    case 'diagnostic': {
      const d = notice.diagnostic;
      if (d.kind === 'oversized') return { type: 'runtime.raw', data: { source: 'acp.stdout', reason: `oversized line (${d.bytes} bytes) rejected`, line: d.head } };
      if (d.kind === 'handler_error') return { type: 'runtime.log', data: { level: 'warn', message: `handling ${d.method} failed: ${d.message}` } };
      if (d.kind === 'unmatched_response') return { type: 'runtime.raw', data: { source: 'acp.stdout', reason: 'response to no pending request', line: d.line } };
      return { type: 'runtime.raw', data: { source: 'acp.stdout', reason: d.kind === 'non_json' ? 'not JSON' : `not a JSON-RPC message: ${d.reason}`, line: d.line } };
    }
    case 'unsupported_request':
      return { type: 'runtime.raw', data: { source: 'acp.request', method: notice.method, reason: 'unsupported agent request, answered -32601' } };
    case 'unrouted':
      return { type: 'runtime.raw', data: { source: 'acp.notification', method: notice.method, reason: `not for a session of this run (${notice.sessionId ?? 'no session id'})` } };
  }
}
