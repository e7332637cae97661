import type { Person } from '../../shared/contracts/promotion.js';
import type { Keyring } from '../../operation/receipt-keys.js';
import type { PriceTable } from '../../shared/prices.js';
import type { RepositoryPolicy } from '../../shared/contracts/load-mission.js';
import type { HostSettings } from '../../shared/host-policy.js';
import type { z } from 'zod';
import { ID_PATTERN } from '../../shared/contracts/ids.js';
import { UhError } from '../../shared/errors.js';
import type { QueueRecord } from '../../shared/queue/operation-store.js';
import type { QueueClient } from '../queue/queue-client.js';
import type { ApiConfig } from './api-config.js';
import type { Logger } from '../../shared/logger.js';
import { seesTenant, type TokenEntry } from './api-tokens.js';
import type { ReceiptKeySource } from '../../operation/receipt-signature.js';
import type { EventHub } from './event-hub.js';
import type { ApiMetrics } from './metrics.js';
import { parseOrThrow } from '../../shared/contracts/zod-issues.js';

/** What `buildApiServer` is given: the queue client and the server's configuration. */
export interface ApiOptions {
  client: QueueClient;
  config: ApiConfig;
  stateDir: string;
  cacheDir: string;
  /** Base dir for relative local repository paths in submitted missions. */
  baseDir: string;
  /** Which repository locations a submitted mission may name (UH_ALLOW_LOCAL_REPOS / UH_ALLOW_HTTP_REPOS). */
  repositoryPolicy: RepositoryPolicy;
  /**
   * The server's UH_ISOLATION and host policy: a mission asking for more is refused (400) before
   * it is enqueued. Unset: auto, nothing allowed.
   */
  hostSettings?: HostSettings;
  /** The price table for batch reports (config `UH_PRICES`); {} when unset. */
  prices: PriceTable;
  /**
   * The receipt keys (UH_RECEIPT_SIGNING_KEY_FILE, UH_RECEIPT_PUBLIC_KEYS, …): the one that signs
   * the receipt of an operation cancelled while queued, and the keyring every served receipt is
   * verified with (built once by buildApiServer).
   */
  receiptKey: ReceiptKeySource;
  /** Author and committer of promotions made through the API (UH_PROMOTION_AUTHOR / _COMMITTER of the server). */
  promotionIdentity: { author: Person; committer: Person };
  /** Where the access log goes (one NDJSON line per request: access-log.ts); unset: no access log. */
  accessLog?: Logger;
}

/** What every route file gets: the options plus the server's shared event hub and metrics. */
export interface RouteContext extends ApiOptions {
  /** `loadKeyring(receiptKey)`: the keys served receipts are verified with. */
  keyring: Keyring;
  hub: EventHub;
  metrics: ApiMetrics;
}

/**
 * The operation's record, or not_found: also for another tenant's operation (the caller's token
 * sees only its tenant's, unless admin), so a token cannot learn that an id exists.
 */
export async function operationOr404(
  ctx: RouteContext,
  id: string,
  req: { auth?: TokenEntry | undefined },
): Promise<QueueRecord> {
  const record = ID_PATTERN.test(id) ? await ctx.client.store.get(id) : null;
  if (!record || !req.auth || !seesTenant(req.auth, record.tenant))
    throw new UhError('not_found', `no operation ${id}`, { hint: 'check the id; GET /v1/operations lists them' });
  return record;
}

/** The tenant a request submits under: its token's (never the body's). */
export function tenantOfRequest(req: { auth?: TokenEntry | undefined }): string {
  if (!req.auth) throw new UhError('internal', 'no token on an authenticated route');
  return req.auth.tenant;
}

/**
 * Fastify validator compiler over zod: a failure is our invalid_input error with one line per
 * field (`query.limit: …`), the same lines the CLI prints.
 */
export function zodValidatorCompiler({ schema, httpPart }: { schema: unknown; httpPart?: string }) {
  const part = httpPart === 'querystring' ? 'query' : (httpPart ?? 'request');
  return (data: unknown) => {
    try {
      return {
        value: parseOrThrow(
          schema as z.ZodType,
          data,
          part === 'body' ? 'mission' : part,
          part === 'body' ? '' : `${part}.`,
        ),
      };
    } catch (error) {
      return { error: error as Error };
    }
  };
}
