/**
 * The completion webhook: POST the completion (and its receipt) as JSON, signed with
 * HMAC-SHA256 over the exact body bytes, retried with exponential backoff.
 *
 *   X-Uh-Signature-256: sha256=<hex hmac(secret, body)>   (only when UH_WEBHOOK_SECRET is set)
 *   X-Uh-Delivery:      <outbox entry id>                 (the same on every retry: dedupe on it)
 *   X-Uh-Event:         operation.settled | batch.settled (the payload's type)
 *
 * 2xx is delivered; 408, 429 and 5xx and network errors are retried; other 4xx are final.
 */
import { createHmac } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';

export interface WebhookTarget {
  url: string;
  secret: string | null;
  attempts: number;
  backoffMs: number;
}

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export interface DeliveryResult {
  ok: boolean;
  attempts: number;
  status: number | null;
  error: string | null;
}

const RETRYABLE = (status: number) => status === 408 || status === 429 || status >= 500;

export async function deliverWebhook(
  target: WebhookTarget,
  deliveryId: string,
  payload: unknown,
  signal?: AbortSignal,
): Promise<DeliveryResult> {
  const body = JSON.stringify(payload);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'uh-results/0.1',
    'x-uh-delivery': deliveryId,
    'x-uh-event': (payload as { type?: string }).type ?? 'operation.settled',
  };
  if (target.secret) headers['x-uh-signature-256'] = signBody(target.secret, body);
  let last: DeliveryResult = { ok: false, attempts: 0, status: null, error: null };
  for (let attempt = 1; attempt <= target.attempts; attempt++) {
    try {
      const response = await fetch(target.url, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.any([AbortSignal.timeout(10_000), ...(signal ? [signal] : [])]),
      });
      await response.arrayBuffer().catch(() => undefined);
      last = {
        ok: response.ok,
        attempts: attempt,
        status: response.status,
        error: response.ok ? null : `HTTP ${response.status}`,
      };
      if (response.ok || !RETRYABLE(response.status)) return last;
    } catch (error) {
      last = { ok: false, attempts: attempt, status: null, error: (error as Error).message };
    }
    if (signal?.aborted) return last;
    if (attempt < target.attempts)
      await delay(target.backoffMs * 2 ** (attempt - 1), undefined, { signal }).catch(() => undefined);
  }
  return last;
}
