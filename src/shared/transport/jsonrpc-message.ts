/**
 * JSON-RPC messages as they travel one per line over stdio, in two dialects:
 *
 *   `jsonrpc2` (ACP):  {"jsonrpc":"2.0","id":1,"method":"session/new","params":{…}}
 *                      {"jsonrpc":"2.0","id":1,"result":{…}}  |  {"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"…"}}
 *                      {"jsonrpc":"2.0","method":"session/update","params":{…}}          (notification: no id)
 *   `codex` (Codex app-server): the same shapes with NO "jsonrpc" member.
 *
 * The dialect decides what we WRITE. What we read is accepted in either form (a `"jsonrpc"`
 * member, when present, must be "2.0"), so a peer that is loose about the field still works.
 * Batches (arrays) are not part of either dialect and are reported as invalid.
 */
import { z } from 'zod';

export type JsonRpcDialect = 'jsonrpc2' | 'codex';
export type JsonRpcId = number | string;

const IdSchema = z.union([z.number().int(), z.string()]);
const VersionSchema = z.literal('2.0').optional();

export const JsonRpcErrorObjectSchema = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});
export type JsonRpcErrorObject = z.infer<typeof JsonRpcErrorObjectSchema>;

const RequestSchema = z.object({
  jsonrpc: VersionSchema,
  id: IdSchema,
  method: z.string().min(1),
  params: z.unknown().optional(),
});
const NotificationSchema = z.object({
  jsonrpc: VersionSchema,
  method: z.string().min(1),
  params: z.unknown().optional(),
});
const ResultSchema = z.object({ jsonrpc: VersionSchema, id: IdSchema, result: z.unknown() });
const ErrorSchema = z.object({ jsonrpc: VersionSchema, id: IdSchema.nullable(), error: JsonRpcErrorObjectSchema });

export type ParsedJsonRpc =
  | { kind: 'request'; id: JsonRpcId; method: string; params: unknown }
  | { kind: 'notification'; method: string; params: unknown }
  | { kind: 'result'; id: JsonRpcId; result: unknown }
  | { kind: 'error'; id: JsonRpcId | null; error: JsonRpcErrorObject }
  | { kind: 'non_json'; reason: string }
  | { kind: 'invalid'; reason: string };

/** Classify one line. Pure; never throws. */
export function parseJsonRpcLine(line: string): ParsedJsonRpc {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { kind: 'non_json', reason: error instanceof Error ? error.message : 'not JSON' };
  }
  if (Array.isArray(value)) return { kind: 'invalid', reason: 'batch messages are not supported' };
  if (value === null || typeof value !== 'object') return { kind: 'invalid', reason: 'not a JSON object' };
  const obj = value as Record<string, unknown>;
  if ('jsonrpc' in obj && obj.jsonrpc !== '2.0')
    return { kind: 'invalid', reason: `unsupported jsonrpc version ${JSON.stringify(obj.jsonrpc)}` };
  if ('method' in obj) {
    if ('id' in obj && obj.id !== null) {
      const r = RequestSchema.safeParse(obj);
      return r.success
        ? { kind: 'request', id: r.data.id, method: r.data.method, params: r.data.params }
        : invalid(r.error);
    }
    const n = NotificationSchema.safeParse(obj);
    return n.success ? { kind: 'notification', method: n.data.method, params: n.data.params } : invalid(n.error);
  }
  if ('error' in obj) {
    const e = ErrorSchema.safeParse(obj);
    return e.success ? { kind: 'error', id: e.data.id, error: e.data.error } : invalid(e.error);
  }
  if ('result' in obj) {
    const r = ResultSchema.safeParse(obj);
    return r.success ? { kind: 'result', id: r.data.id, result: r.data.result } : invalid(r.error);
  }
  return { kind: 'invalid', reason: 'neither a request, a notification nor a response' };
}

function invalid(error: z.ZodError): ParsedJsonRpc {
  const first = error.issues[0];
  return {
    kind: 'invalid',
    reason: first ? `${first.path.join('.') || '(root)'}: ${first.message}` : 'invalid message',
  };
}

export type OutgoingJsonRpc =
  | { id: JsonRpcId; method: string; params?: unknown }
  | { method: string; params?: unknown }
  | { id: JsonRpcId; result: unknown }
  | { id: JsonRpcId | null; error: JsonRpcErrorObject };

/** One line (with its `\n`) in the dialect's framing. `"jsonrpc"` comes first, as peers expect. */
export function encodeJsonRpc(message: OutgoingJsonRpc, dialect: JsonRpcDialect): string {
  const body = dialect === 'jsonrpc2' ? { jsonrpc: '2.0', ...message } : { ...message };
  if ('result' in body && body.result === undefined) (body as { result: unknown }).result = null;
  return JSON.stringify(body) + '\n';
}
