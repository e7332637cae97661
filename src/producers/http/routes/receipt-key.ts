import type { FastifyInstance } from 'fastify';
import { publicKeyPem } from '../../../operation/receipt-keys.js';
import type { RouteContext } from '../context.js';

/** `GET /v1/receipt-key`: the Ed25519 public keys this server verifies receipts with (never an HMAC secret). */
export function receiptKeyRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const summary =
    'The receipt public keys (PEM) and their key ids: verify receipts anywhere (uh receipt verify --public-key)';
  app.get('/v1/receipt-key', { config: { scope: 'read' }, schema: { summary, tags: ['receipts'] } }, async () => {
    const entries = [...ctx.keyring.publicKeys.entries()];
    return {
      keys: entries.map(([key_id, key]) => ({ alg: 'ed25519' as const, key_id, public_key: publicKeyPem(key) })),
    };
  });
}
