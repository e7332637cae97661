/** One error body for every failure: `{error: {kind, message, details, hint}}`. */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { errorMessage, UhError } from '../../shared/errors.js';

const STATUS_OF: Record<string, number> = {
  invalid_input: 400,
  unsupported_capability: 400,
  not_found: 404,
  conflict: 409,
  // A receipt that does not verify (unsigned, forged, unknown key): nothing acts on it.
  untrusted_receipt: 422,
  push_rejected: 502,
  runtime_unavailable: 503,
};

export function sendError(
  reply: FastifyReply,
  status: number,
  kind: string,
  message: string,
  hint?: string,
  details: readonly string[] = [],
): FastifyReply {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ error: { kind, message, details, hint: hint ?? null } });
}

/** Fastify's own validation failures as our one-line-per-field messages. */
function validationLines(error: FastifyError): string[] {
  return (error.validation ?? []).map((v) => {
    const field =
      (v.instancePath || '').replace(/^\//, '').replace(/\//g, '.') ||
      String((v.params as { missingProperty?: string })?.missingProperty ?? '(root)');
    return `${error.validationContext ? `${error.validationContext}.` : ''}${field}: ${v.message ?? 'invalid'}`;
  });
}

function frameworkStatus(error: FastifyError): { status: number; kind: string } {
  const status = error.statusCode ?? 500;
  if (status === 413) return { status, kind: 'too_large' };
  if (status === 415) return { status, kind: 'unsupported_media_type' };
  if (status === 404) return { status, kind: 'not_found' };
  return { status, kind: status >= 500 ? 'internal' : 'invalid_input' };
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, _req, reply) => {
    if (UhError.isInstance(error)) {
      const e = error as UhError;
      return reply
        .code(STATUS_OF[e.kind] ?? 500)
        .send({ error: { kind: e.kind, name: e.name, message: e.message, details: e.details, hint: e.hint ?? null } });
    }
    if (error.validation) {
      const details = validationLines(error);
      return sendError(
        reply,
        400,
        'invalid_input',
        `invalid ${error.validationContext ?? 'request'}: ${details.length} problem${details.length === 1 ? '' : 's'}`,
        undefined,
        details,
      );
    }
    const { status, kind } = frameworkStatus(error);
    return sendError(reply, status, kind, status >= 500 ? `internal error: ${errorMessage(error)}` : error.message);
  });
  app.setNotFoundHandler((req, reply) =>
    sendError(
      reply,
      404,
      'not_found',
      `no route ${req.method} ${req.url.split('?')[0]}`,
      'GET /openapi.json lists the routes',
    ),
  );
}
