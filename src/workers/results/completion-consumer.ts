/**
 * The results worker's completion consumer: reads the durable outbox stream with the consumer
 * group `results` (created at the stream's start, so completions settled while no consumer ran
 * are all delivered), delivers each (webhook when configured; always handed to `onCompletion`),
 * then XACKs it. A consumer that dies before its ACK gets its pending entries again on restart
 * (same consumer name), and entries idle in a dead consumer are claimed after `claimIdleMs`.
 * Delivery is at least once: receivers dedupe on the delivery id (the stream entry id).
 *
 * Trust: an entry names an operation; what the worker acts on is that operation's receipt, and
 * only once its signature verifies (`verify`). A finished completion whose receipt is unsigned,
 * forged or missing (an outbox entry written by anyone who reached Redis) gets no webhook, no
 * batch settlement and no promotion: it goes to the dead-letter stream with the reason. Status,
 * verdict and exit code come from the verified receipt, never from the entry's own fields.
 */
import type { Redis } from 'ioredis';
import type { Receipt } from '../../shared/contracts/receipt.js';
import type { Logger } from '../../shared/logger.js';
import type { Completion, OperationStore } from '../../shared/queue/operation-store.js';
import { RESULTS_GROUP } from '../../shared/queue/topology.js';
import { deliverWebhook, type DeliveryResult, type WebhookTarget } from './webhook.js';

export interface ConsumerOptions {
  store: OperationStore;
  consumer: string;
  webhook: WebhookTarget | null;
  logger: Logger;
  signal: AbortSignal;
  onCompletion?: (completion: Completion, delivery: { id: string; webhook: DeliveryResult | null }) => void;
  /** After each operation completion, before its ACK (e.g. settle the batch it belongs to); the verified receipt when finished. */
  afterCompletion?: (completion: Completion, receipt: Receipt | null) => Promise<void>;
  /** The receipt check: its text → the verified receipt, or the reason it cannot be trusted. */
  verify: (text: string | null) => { ok: true; receipt: Receipt } | { ok: false; reason: string };
  /** A settled batch's outbox entry, after its `batch.settled` webhook. */
  onBatchSettled?: (
    event: { batch_id: string; exit_code: number },
    delivery: { id: string; webhook: DeliveryResult | null },
  ) => void;
  claimIdleMs?: number;
}

type Entry = [string, string[]];
type GroupReply = Array<[string, Entry[]]> | null;

export async function ensureResultsGroup(redis: Redis, outbox: string): Promise<void> {
  try {
    await redis.xgroup('CREATE', outbox, RESULTS_GROUP, '0', 'MKSTREAM');
  } catch (error) {
    if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
  }
}

type Trusted =
  { ok: true; completion: Completion; receipt: Receipt | null } | { ok: false; completion: Completion; reason: string };

/**
 * An entry as the worker may act on it. `finished`: its receipt verified, the entry's status,
 * verdict and exit code replaced by the receipt's. Other states (`unknown`: no receipt exists)
 * carry no verdict and pass as they are.
 */
async function trustedCompletion(options: ConsumerOptions, completion: Completion): Promise<Trusted> {
  if (completion.state !== 'finished') return { ok: true, completion, receipt: null };
  const text = await options.store.artifact(completion.operation_id, 'receipt');
  const check = options.verify(text);
  if (!check.ok) return { ok: false, completion, reason: check.reason };
  const { receipt } = check;
  if (receipt.operation_id !== completion.operation_id)
    return { ok: false, completion, reason: `the receipt is ${receipt.operation_id}'s` };
  return {
    ok: true,
    receipt,
    completion: { ...completion, status: receipt.status, verdict: receipt.verdict, exit_code: receipt.exit_code },
  };
}

type Handler = (entry: Entry) => Promise<void>;
type ReadGroup = (...args: (string | number)[]) => Promise<GroupReply>;

/** One entry to the dead-letter stream: what it carried, its delivery id and why. */
async function deadLetter(options: ConsumerOptions, kind: string, raw: string, id: string, error: string) {
  const { store } = options;
  await store.redis.xadd(store.keys.outboxDead, '*', kind, raw, 'delivery_id', id, 'error', error);
}

/** A completion: only on a receipt that verifies does anything act (webhook, promotion, batch). */
async function handleCompletion(options: ConsumerOptions, id: string, raw: string): Promise<void> {
  const { store, logger, signal } = options;
  const trusted = await trustedCompletion(options, JSON.parse(raw) as Completion);
  if (!trusted.ok) {
    logger.warn(
      { operation_id: trusted.completion.operation_id, reason: trusted.reason },
      'completion refused: its receipt does not verify; nothing acts on it',
    );
    await deadLetter(options, 'completion', raw, id, `untrusted receipt: ${trusted.reason}`);
    return void (await store.redis.xack(store.keys.outbox, RESULTS_GROUP, id));
  }
  const { completion, receipt } = trusted;
  let webhook: DeliveryResult | null = null;
  if (options.webhook) {
    const body = { type: 'operation.settled', delivery_id: id, completion, receipt };
    webhook = await deliverWebhook(options.webhook, id, body, signal);
    if (signal.aborted && !webhook.ok) return; // not acked: delivered again after restart
    if (!webhook.ok) {
      logger.warn(
        { operation_id: completion.operation_id, error: webhook.error },
        'webhook failed every attempt: moved to the dead-letter stream',
      );
      await deadLetter(options, 'completion', raw, id, webhook.error ?? 'unknown');
    }
  }
  options.onCompletion?.(completion, { id, webhook });
  await options.afterCompletion?.(completion, receipt);
  await store.redis.xack(store.keys.outbox, RESULTS_GROUP, id);
}

async function handleBatch(options: ConsumerOptions, id: string, raw: string): Promise<void> {
  const { store, signal } = options;
  const event = JSON.parse(raw) as { batch_id: string; exit_code: number };
  const webhook = options.webhook
    ? await deliverWebhook(options.webhook, id, { ...event, type: 'batch.settled', delivery_id: id }, signal)
    : null;
  if (webhook && signal.aborted && !webhook.ok) return;
  if (webhook && !webhook.ok) await deadLetter(options, 'batch', raw, id, webhook.error ?? 'unknown');
  options.onBatchSettled?.(event, { id, webhook });
  await store.redis.xack(store.keys.outbox, RESULTS_GROUP, id);
}

function entryHandler(options: ConsumerOptions): Handler {
  const { store } = options;
  return async ([id, fields]) => {
    if (fields[0] === 'batch') return handleBatch(options, id, fields[1] ?? '{}');
    const raw = fields[fields.indexOf('completion') + 1];
    if (raw === undefined) return void (await store.redis.xack(store.keys.outbox, RESULTS_GROUP, id));
    return handleCompletion(options, id, raw);
  };
}

/** Our own pending entries first: delivered before a crash, never acked. */
async function drainPending(options: ConsumerOptions, read: ReadGroup, handle: Handler): Promise<void> {
  let pending = '0';
  for (;;) {
    const args = ['GROUP', RESULTS_GROUP, options.consumer, 'COUNT', 100];
    const reply = (await read(...args, 'STREAMS', options.store.keys.outbox, pending)) ?? [];
    const entries = reply[0]?.[1] ?? [];
    if (entries.length === 0) return;
    for (const entry of entries) await handle(entry);
    pending = entries.at(-1)?.[0] ?? pending;
  }
}

/** Entries stuck with a dead consumer, claimed for this one. */
async function claimStuck(options: ConsumerOptions, handle: Handler): Promise<void> {
  const { store } = options;
  const idle = options.claimIdleMs ?? 60_000;
  const claimed = (await store.redis.xautoclaim(
    store.keys.outbox,
    RESULTS_GROUP,
    options.consumer,
    idle,
    '0-0',
    'COUNT',
    100,
  )) as [string, Entry[]];
  for (const entry of claimed[1] ?? []) if (entry) await handle(entry);
}

export async function runCompletionConsumer(options: ConsumerOptions): Promise<void> {
  const { store, signal } = options;
  const outbox = store.keys.outbox;
  await ensureResultsGroup(store.redis, outbox);
  const reader = store.redis.duplicate();
  reader.on('error', () => undefined);
  const read = reader.xreadgroup.bind(reader) as unknown as ReadGroup;
  const handle = entryHandler(options);
  try {
    await drainPending(options, read, handle);
    // New entries, and now and then entries stuck with a dead consumer.
    let lastClaim = 0;
    while (!signal.aborted) {
      if (Date.now() - lastClaim > 10_000) {
        lastClaim = Date.now();
        await claimStuck(options, handle);
      }
      const args = ['GROUP', RESULTS_GROUP, options.consumer, 'COUNT', 50, 'BLOCK', 1000];
      const reply = (await read(...args, 'STREAMS', outbox, '>')) ?? [];
      for (const entry of reply[0]?.[1] ?? []) await handle(entry);
    }
  } finally {
    reader.disconnect();
  }
}
