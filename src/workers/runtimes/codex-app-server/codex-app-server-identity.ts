/**
 * Identity of one operation's Codex turn, kept in the runtime journal (`ctx.journal`, key
 * `codex_app_server`) so it survives the worker dying. Written in this order, each `put` durable
 * before the next step:
 *
 *   1. thread:   {codex_home, thread_id, thread_origin}           after thread/start|resume answered
 *   2. baseline: {baseline_turn_ids}                              every turn id of the thread before ours
 *   3. sending:  {client_message_id, dispatch: "sending"}         BEFORE turn/start is written
 *   4. bound:    {turn_id, dispatch: "bound"}                     as soon as turn/start answers
 *   5. terminal: {readback_status, dispatch: "terminal"}          after thread/turns/list confirmed it
 *
 * From step 3 on, the operation must never send `turn/start` again: a re-run or `recover` only
 * reads the thread and adopts the ONE turn outside the baseline whose user message carries our
 * client message id (`clientId`). Zero or several such turns: the operation stays UNKNOWN.
 */
import { z } from 'zod';
import type { RuntimeJournalV1 } from '../../../shared/runtime/v1/runtime-context.js';
import { clientIdOfTurn, type Turn } from './codex-app-server-protocol.js';

export const JOURNAL_KEY = 'codex_app_server';

export const AppServerJournalSchema = z.looseObject({
  codex_home: z.string().optional(),
  thread_id: z.string().optional(),
  thread_origin: z.enum(['started', 'resumed']).optional(),
  baseline_turn_ids: z.array(z.string()).optional(),
  client_message_id: z.string().optional(),
  dispatch: z.enum(['sending', 'bound', 'terminal']).optional(),
  turn_id: z.string().optional(),
  readback_status: z.enum(['completed', 'interrupted', 'failed']).optional(),
  /** Set when we asked for `turn/interrupt` (so an interrupted readback is ours: cancel or timeout). */
  interrupt: z.enum(['cancel', 'timeout']).optional(),
});
export type AppServerJournal = z.infer<typeof AppServerJournalSchema>;

/**
 * The client message id of an operation's turn: `uh-op:<operation_id>`, and for a deliberate new
 * attempt (the queue runs attempt N only after attempt N-1 settled) `uh-op:<operation_id>:attempt-<N>`.
 * Recovery always uses the id the journal recorded, never a recomputed one.
 */
export function clientMessageIdOf(operationId: string, attempt = 1): string {
  return attempt > 1 ? `uh-op:${operationId}:attempt-${attempt}` : `uh-op:${operationId}`;
}

/** Has `turn/start` possibly been sent for this operation? Then it must never be sent again. */
export function mayHaveDispatched(record: AppServerJournal): boolean {
  return record.dispatch !== undefined;
}

/** Journal access that keeps the whole record in one key and merges patches. */
export class IdentityJournal {
  private record: AppServerJournal = {};
  constructor(private readonly journal: RuntimeJournalV1) {}

  /** Load what an earlier attempt wrote; a corrupt record reads as a dispatched one (fail closed). */
  async load(): Promise<AppServerJournal> {
    const all = await this.journal.get();
    const raw = all[JOURNAL_KEY];
    if (raw === undefined) return (this.record = {});
    const parsed = AppServerJournalSchema.safeParse(raw);
    this.record = parsed.success ? parsed.data : { dispatch: 'sending' };
    return this.record;
  }

  get current(): AppServerJournal {
    return this.record;
  }

  /** Merge and persist; durable when it resolves. */
  async put(patch: AppServerJournal): Promise<void> {
    this.record = { ...this.record, ...patch };
    await this.journal.put({ [JOURNAL_KEY]: this.record });
  }

  /** For recovery, whose writes are informative: a journal it may not write (not the owner) is no failure. */
  async putIfPossible(patch: AppServerJournal): Promise<void> {
    try {
      await this.put(patch);
    } catch {
      // The result is returned to the caller either way.
    }
  }
}

export type Adoption =
  { kind: 'one'; turn: Turn } | { kind: 'none'; reason: string } | { kind: 'several'; turnIds: string[] };

/**
 * Which turn of the thread is this operation's. Pure. Candidates: turns NOT in the baseline whose
 * user message carries our client message id. When the journal already bound a turn id, the one
 * candidate must be that turn.
 */
export function selectAdoptableTurn(turns: readonly Turn[], record: AppServerJournal): Adoption {
  const baseline = new Set(record.baseline_turn_ids ?? []);
  if (!record.client_message_id) return { kind: 'none', reason: 'the journal has no client message id' };
  if (record.baseline_turn_ids === undefined)
    return { kind: 'none', reason: 'the journal has no baseline of turn ids' };
  const candidates = turns.filter((t) => !baseline.has(t.id) && clientIdOfTurn(t) === record.client_message_id);
  if (candidates.length > 1) return { kind: 'several', turnIds: candidates.map((t) => t.id) };
  const [only] = candidates;
  if (!only) return { kind: 'none', reason: `no new turn carries client message id ${record.client_message_id}` };
  if (record.turn_id && record.turn_id !== only.id) {
    return {
      kind: 'none',
      reason: `the bound turn ${record.turn_id} is not the turn carrying our client message id (${only.id})`,
    };
  }
  return { kind: 'one', turn: only };
}
