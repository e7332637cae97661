/**
 * An agent answered with a payload that does not match the ACP wire (`acp-protocol.ts`).
 * Recognisable across realms by `Symbol.for` marker.
 */
import type { z } from 'zod';

const MARKER = Symbol.for('uh.acp.protocol_error');

export class AcpProtocolError extends Error {
  readonly [MARKER] = true;
  override readonly name = 'AcpProtocolError';

  static isInstance(value: unknown): value is AcpProtocolError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}

/** Parse an agent's result for `method`, or throw `AcpProtocolError` naming the first bad field. */
export function parseOrProtocolError<S extends z.ZodType>(schema: S, value: unknown, method: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue && issue.path.length ? issue.path.join('.') : '(result)';
  throw new AcpProtocolError(`${method} answered an invalid result: ${where}: ${issue?.message ?? 'invalid'}`);
}
