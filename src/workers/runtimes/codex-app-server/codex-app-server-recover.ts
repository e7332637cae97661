/**
 * Recovery of an operation whose worker died (or lost the reply) after `turn/start` may have been
 * sent: start a FRESH app server on the same CODEX_HOME (the journal's, the one the run's server
 * reported: under isolation the tenant's persistent copy), read the journal's thread
 * (`thread/turns/list`, every page) and adopt exactly one new turn (outside the baseline) whose
 * user message carries our client message id. Never sends `turn/start`, `turn/steer` or
 * `thread/resume`: reading only. Zero or several candidates, another CODEX_HOME, or an unreadable
 * thread → `unknown`. The adopted turn's readback status is written back to the journal.
 */
import { statSync } from 'node:fs';
import { errorMessage } from '../../../shared/errors.js';
import type { RuntimeJournalV1 } from '../../../shared/runtime/v1/runtime-context.js';
import type { RecoverContextV1, RecoveryV1 } from '../../../shared/runtime/v1/runtime-recovery.js';
import { JsonRpcTransportError } from '../../../shared/transport/jsonrpc-errors.js';
import { listAllTurns, startAppServer } from './codex-app-server-client.js';
import { finishedData, isTerminalStatus } from './codex-app-server-finish.js';
import { IdentityJournal, mayHaveDispatched, selectAdoptableTurn } from './codex-app-server-identity.js';
import type { CodexAppServerSettings } from './codex-app-server-settings.js';

export type RecoverIo = Pick<RecoverContextV1, 'spawn' | 'env' | 'logDir'> & { workDir?: string };

type AppServer = Awaited<ReturnType<typeof startAppServer>>;
type BoundRecord = Awaited<ReturnType<IdentityJournal['load']>> & { thread_id: string };
type Turn = Parameters<typeof selectAdoptableTurn>[0][number];
type Ids = { thread_id?: string; turn_id?: string };

function isDirectory(p: string): boolean {
  return statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false;
}

/** How the run's own interrupt (a cancel, a timeout) reads in the adopted turn's outcome. */
function interruptOf(record: BoundRecord) {
  if (record.interrupt === 'cancel')
    return { kind: 'cancel' as const, message: 'cancelled (turn interrupted on request)' };
  if (record.interrupt === 'timeout')
    return { kind: 'timeout' as const, message: 'the mission timed out (turn interrupted)', timeoutMs: 0 };
  return null;
}

/** The turn carrying our client message id, settled when it has ended. */
async function adoptTurn(
  client: AppServer,
  record: BoundRecord,
  identity: IdentityJournal,
  config: CodexAppServerSettings,
  ids: Ids,
): Promise<RecoveryV1> {
  if (record.codex_home && client.codexHome !== record.codex_home) {
    const reason = `the app server uses CODEX_HOME ${client.codexHome}, the run used ${record.codex_home}`;
    return { state: 'unknown', reason, ...ids };
  }
  const adoption = selectAdoptableTurn(await listAllTurns(client, record.thread_id), record);
  if (adoption.kind === 'several') {
    const reason = `several new turns carry our client message id: ${adoption.turnIds.join(', ')}`;
    return { state: 'unknown', reason, ...ids };
  }
  if (adoption.kind === 'none') return { state: 'unknown', reason: adoption.reason, ...ids };
  const turn: Turn = adoption.turn;
  const found = { thread_id: record.thread_id, turn_id: turn.id };
  if (!isTerminalStatus(turn.status)) {
    await identity.putIfPossible({ turn_id: turn.id, dispatch: 'bound' });
    return { state: 'running', reason: `turn ${turn.id} is still in progress`, ...found };
  }
  await identity.putIfPossible({ turn_id: turn.id, dispatch: 'terminal', readback_status: turn.status });
  const finished = finishedData({
    binary: config.binary,
    threadId: record.thread_id,
    turn,
    clientMessageId: record.client_message_id ?? null,
    abort: interruptOf(record),
    dispatch: 'bound',
    failure: { raw: 'recovered', message: 'the turn was interrupted when its worker or app server went away' },
    readbackBy: 'recover',
  });
  return { state: 'settled', reason: `adopted turn ${turn.id} (${turn.status})`, finished, ...found };
}

/**
 * Settle one operation from its journal. Never throws; never starts a turn.
 * Call it as `recoverCodexAppServerOperation(ctx.journal, config, ctx)` with the operation's
 * parsed runtime_config (same `codex_home`/`binary` as the run).
 */
export async function recoverCodexAppServerOperation(
  journal: RuntimeJournalV1,
  config: CodexAppServerSettings,
  io: RecoverIo,
): Promise<RecoveryV1> {
  const identity = new IdentityJournal(journal);
  let record;
  try {
    record = await identity.load();
  } catch (error) {
    return { state: 'unknown', reason: `cannot read the runtime journal: ${errorMessage(error)}` };
  }
  if (!mayHaveDispatched(record))
    return { state: 'not_dispatched', reason: 'the journal shows turn/start was never sent' };
  const ids = {
    ...(record.thread_id ? { thread_id: record.thread_id } : {}),
    ...(record.turn_id ? { turn_id: record.turn_id } : {}),
  };
  const threadId = record.thread_id;
  if (!threadId)
    return { state: 'unknown', reason: 'turn/start may have been sent but the journal has no thread id', ...ids };
  let client;
  try {
    const cwd = io.workDir ?? io.logDir;
    const name = 'codex-app-server.recover';
    // The run's own CODEX_HOME (under isolation its tenant's copy on this worker, not the configured one).
    const home = record.codex_home && isDirectory(record.codex_home) ? { codex_home: record.codex_home } : {};
    const server = { ...config, ...home };
    client = await startAppServer({ config: server, spawn: io.spawn, env: io.env, cwd, logDir: io.logDir, name });
  } catch (error) {
    const why = JsonRpcTransportError.isInstance(error) ? error.message : errorMessage(error);
    return { state: 'unknown', reason: `cannot start a fresh app server to read the thread: ${why}`, ...ids };
  }
  try {
    return await adoptTurn(client, { ...record, thread_id: threadId }, identity, config, ids);
  } catch (error) {
    return { state: 'unknown', reason: `cannot read thread ${threadId}: ${errorMessage(error)}`, ...ids };
  } finally {
    await client.close();
  }
}
