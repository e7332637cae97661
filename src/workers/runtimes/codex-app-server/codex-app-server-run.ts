/**
 * One operation on the Codex app server. States (each transition journalled before the next):
 *
 *   recover?  — the journal says turn/start may have been sent: recover (read only), never dispatch
 *   start     — spawn `codex app-server`, initialize
 *   thread    — thread/resume (this operation's or its mission's thread) or thread/start → journal
 *   baseline  — every turn id of the thread → journal; refuse a busy (active) thread
 *   dispatch  — journal {client_message_id, dispatch: sending} → turn/start → journal {turn_id, bound}
 *   follow    — notifications of our turn → events; abort → turn/interrupt (once), bounded grace
 *   readback  — thread/turns/list until our exact turn is terminal (a notification is not proof);
 *               if the app server died or ignored the interrupt: a fresh one reads it (recovery)
 *   finished  — journal {readback_status, terminal}; one runtime.finished with thread/turn ids
 */
import type { RuntimeContextV1, RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { abortReasonOf } from '../../../shared/runtime/v1/runtime-context.js';
import type { RuntimeFinishedData } from '../../../shared/runtime/v1/runtime-event.js';
import type { RecoveryV1 } from '../../../shared/runtime/v1/runtime-recovery.js';
import { errorMessage } from '../../../shared/errors.js';
import { JsonRpcRemoteError, JsonRpcTransportError } from '../../../shared/transport/jsonrpc-errors.js';
import { z } from 'zod';
import { listAllTurns, startAppServer, type AppServerClient, type AppServerInput } from './codex-app-server-client.js';
import { decideApproval } from './codex-app-server-approvals.js';
import { initialTurnState, translateAppServerNotification } from './codex-app-server-events.js';
import { finishedData, isTerminalStatus, type FinishFacts } from './codex-app-server-finish.js';
import { IdentityJournal, clientMessageIdOf, mayHaveDispatched } from './codex-app-server-identity.js';
import { missionThreadOf, rememberMissionThread } from './codex-app-server-mission-threads.js';
import { ThreadStartResultSchema, TurnNotificationSchema, TurnStartResultSchema, type Turn } from './codex-app-server-protocol.js';
import { recoverCodexAppServerOperation } from './codex-app-server-recover.js';
import type { CodexAppServerSettings } from './codex-app-server-settings.js';

const Anything = z.unknown();
const READBACK_POLL_MS = 150;
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

function finishedFromRecovery(rec: RecoveryV1, binary: string, clientMessageId: string, why: string): RuntimeFinishedData {
  if (rec.state === 'settled' && rec.finished) return { ...rec.finished, recovery: { state: rec.state, reason: rec.reason } };
  return {
    ...finishedData({
      binary,
      threadId: rec.thread_id ?? null,
      turn: null,
      clientMessageId,
      abort: null,
      dispatch: 'sent',
      failure: { raw: 'dispatch:unknown', message: `${why}; recovery: ${rec.reason}` },
    }),
    ...(rec.turn_id ? { turn_id: rec.turn_id } : {}),
    recovery: { state: rec.state, reason: rec.reason },
  };
}

export async function* runCodexAppServer(config: CodexAppServerSettings, prompt: string, ctx: RuntimeContextV1): AsyncGenerator<RuntimeEventV1> {
  const identity = new IdentityJournal(ctx.journal);
  const record = await identity.load();
  const clientMessageId = clientMessageIdOf(ctx.mission.operationId, ctx.mission.attempt);
  const io = { spawn: ctx.spawn, env: ctx.env, logDir: ctx.logDir, workDir: ctx.workDir };
  const base = { binary: config.binary, clientMessageId };
  const abortNow = () => (ctx.signal.aborted ? abortReasonOf(ctx.signal) : null);

  if (mayHaveDispatched(record)) {
    // A re-delivered or retried operation: turn/start may already have been sent. Never again.
    yield { type: 'runtime.log', data: { level: 'warn', message: 'turn/start may already have been sent for this operation: recovering, not dispatching' } };
    const rec = await recoverCodexAppServerOperation(ctx.journal, config, io);
    if (rec.thread_id) yield { type: 'runtime.started', data: { thread_id: rec.thread_id, ...(rec.turn_id ? { turn_id: rec.turn_id } : {}), recovered: true } };
    yield { type: 'runtime.finished', data: finishedFromRecovery(rec, config.binary, record.client_message_id ?? clientMessageId, 'an earlier attempt may have started the turn') };
    return;
  }
  const notSent = (facts: Partial<FinishFacts>): RuntimeEventV1 => ({
    type: 'runtime.finished',
    data: finishedData({ ...base, threadId: null, turn: null, abort: abortNow(), dispatch: 'not_sent', ...facts }),
  });
  if (ctx.signal.aborted) return yield notSent({});

  const permissions: RuntimeEventV1[] = [];
  let client: AppServerClient;
  try {
    client = await startAppServer({
      config,
      ...io,
      cwd: ctx.workDir,
      name: 'codex-app-server',
      onRequest: (method, params) => {
        const answer = decideApproval(method, params, ctx.workDir, config.approvals);
        if (!answer) throw JsonRpcRemoteError.methodNotFound(method);
        permissions.push({ type: 'runtime.permission', data: { request: { method, params }, answer: answer.result, accepted: answer.accepted, reason: answer.reason } });
        return answer.result;
      },
    });
  } catch (error) {
    if (JsonRpcTransportError.isInstance(error) && error.kind === 'spawn') {
      return yield notSent({ spawnError: { code: error.details.code ?? 'ENOENT', message: error.message } });
    }
    return yield notSent({ failure: { raw: 'initialize', message: `codex app-server did not initialize: ${errorMessage(error)}` } });
  }

  let threadId: string | null = null;
  let sessionId: string | null = null;
  let turnId: string | null = null;
  const state = initialTurnState();
  try {
    // thread: this operation's own (an earlier attempt that never dispatched), else the mission's, else new.
    const resumeId = record.thread_id ?? (config.mission_thread === 'resume' ? missionThreadOf(client.codexHome, ctx.mission.missionId) : null);
    const threadParams = {
      cwd: ctx.workDir,
      sandbox: config.sandbox,
      approvalPolicy: config.approval_policy,
      ...(config.model ? { model: config.model } : {}),
    };
    let origin: 'started' | 'resumed' = 'started';
    let thread: z.infer<typeof ThreadStartResultSchema>['thread'] | null = null;
    if (resumeId) {
      try {
        thread = (await client.call('thread/resume', { threadId: resumeId, ...threadParams, excludeTurns: true }, ThreadStartResultSchema)).thread;
        origin = 'resumed';
      } catch (error) {
        if (!JsonRpcRemoteError.isInstance(error)) throw error;
        yield { type: 'runtime.log', data: { level: 'warn', message: `cannot resume thread ${resumeId} (${error.rpcMessage}): starting a new thread` } };
      }
    }
    thread ??= (await client.call('thread/start', { ...threadParams, serviceName: 'uh' }, ThreadStartResultSchema)).thread;
    threadId = thread.id;
    sessionId = thread.sessionId ?? thread.id;
    await identity.put({ codex_home: client.codexHome, thread_id: threadId, thread_origin: origin });
    try {
      rememberMissionThread(client.codexHome, ctx.mission.missionId, threadId, ctx.mission.operationId, new Date(ctx.now()));
    } catch (error) {
      // Only follow-ups lose their thread (they start a new one); this run is unaffected.
      yield { type: 'runtime.log', data: { level: 'warn', message: `cannot record the mission's thread in ${client.codexHome}: ${errorMessage(error)}` } };
    }

    // baseline: every turn already in the thread (none in a thread we just started).
    const baseline = origin === 'started' ? [] : (await listAllTurns(client, threadId)).map((t) => t.id);
    await identity.put({ baseline_turn_ids: baseline });
    if (thread.status?.type === 'active') {
      return yield notSent({ threadId, failure: { raw: 'thread_busy', message: `thread ${threadId} has an active turn; refusing to start another` } });
    }
    if (ctx.signal.aborted) return yield notSent({ threadId });

    // dispatch: journal first, then the one turn/start of this operation.
    await identity.put({ client_message_id: clientMessageId, dispatch: 'sending' });
    let started: Turn;
    try {
      started = (
        await client.call(
          'turn/start',
          { threadId, clientUserMessageId: clientMessageId, input: [{ type: 'text', text: prompt, text_elements: [] }] },
          TurnStartResultSchema,
        )
      ).turn;
    } catch (error) {
      if (JsonRpcRemoteError.isInstance(error)) {
        return yield notSent({ threadId, failure: { raw: `turn/start:${error.code}`, message: `turn/start was refused: ${error.rpcMessage}` } });
      }
      // Lost reply: the turn may exist. Read it with a fresh app server; never send again.
      await client.close();
      const rec = await recoverCodexAppServerOperation(ctx.journal, config, io);
      return yield { type: 'runtime.finished', data: finishedFromRecovery(rec, config.binary, clientMessageId, `turn/start got no answer (${errorMessage(error)})`) };
    }
    if (baseline.includes(started.id)) {
      return yield {
        type: 'runtime.finished',
        data: finishedData({ ...base, threadId, turn: null, abort: abortNow(), dispatch: 'sent', failure: { raw: 'turn_not_new', message: `turn/start answered an existing turn ${started.id}` } }),
      };
    }
    turnId = started.id;
    state.turnId = turnId;
    await identity.put({ turn_id: turnId, dispatch: 'bound' });
    yield { type: 'runtime.started', data: { thread_id: threadId, turn_id: turnId, session_id: sessionId, pid: client.child.pid, client_message_id: clientMessageId, thread_origin: origin } };

    // follow: our turn's notifications until turn/completed, the server's death, or an unheeded interrupt.
    const aborted = new Promise<'abort'>((resolve) => {
      if (ctx.signal.aborted) resolve('abort');
      else ctx.signal.addEventListener('abort', () => resolve('abort'), { once: true });
    });
    let nextInput = client.next();
    let grace: Promise<'grace'> | null = null;
    let notified: Turn | null = null;
    let lostServer: string | null = null;
    // The server refuses turn/interrupt ("no active turn") until the turn has really started:
    // an abort before `turn/started` is held and sent when it arrives.
    let turnActive = false;
    let interruptPending = false;
    const interrupt = async function* (): AsyncGenerator<RuntimeEventV1> {
      interruptPending = false;
      const answer = await client
        .call('turn/interrupt', { threadId, turnId }, Anything, config.request_timeout_ms)
        .then(() => 'ok', (e: unknown) => errorMessage(e));
      yield { type: 'runtime.log', data: { level: 'debug', message: `turn/interrupt: ${answer}` } };
      grace = delay(config.interrupt_grace_ms).then(() => 'grace' as const);
    };
    for (;;) {
      const got: AppServerInput | 'abort' | 'grace' = await Promise.race([nextInput, grace ?? aborted]);
      yield* permissions.splice(0);
      if (got === 'abort') {
        const reason = abortReasonOf(ctx.signal);
        await identity.put({ interrupt: reason.kind });
        yield { type: 'runtime.log', data: { level: 'info', message: `${reason.message}: interrupting turn ${turnId}` } };
        // Until the turn is active, a bounded wait for turn/started (then the interrupt goes).
        grace = delay(config.interrupt_grace_ms + config.request_timeout_ms).then(() => 'grace' as const);
        if (turnActive) yield* interrupt();
        else interruptPending = true;
        continue;
      }
      if (got === 'grace') {
        lostServer = `turn ${turnId} did not end within ${config.interrupt_grace_ms} ms of turn/interrupt`;
        break;
      }
      nextInput = client.next();
      if (got.kind === 'closed') {
        lostServer = `the app server went away: ${got.message}`;
        break;
      }
      if (got.method === 'turn/started' || got.method === 'turn/completed') {
        const p = TurnNotificationSchema.safeParse(got.params);
        if (!p.success || p.data.turn.id !== turnId) continue;
        if (got.method === 'turn/completed') {
          notified = p.data.turn;
          break;
        }
        turnActive = true;
        if (interruptPending) yield* interrupt();
        continue;
      }
      yield* translateAppServerNotification(got.method, got.params, state);
    }

    // readback: the exact turn, terminal, from thread/turns/list.
    let readback: Turn | null = null;
    if (lostServer === null) {
      const deadline = ctx.now() + config.readback_timeout_ms;
      for (;;) {
        readback = (await listAllTurns(client, threadId)).find((t) => t.id === turnId) ?? null;
        if ((readback && isTerminalStatus(readback.status)) || ctx.now() >= deadline) break;
        await delay(READBACK_POLL_MS);
      }
    }
    await client.close();
    if (lostServer !== null) {
      yield { type: 'runtime.log', data: { level: 'warn', message: `${lostServer}: reading the turn with a fresh app server` } };
      const rec = await recoverCodexAppServerOperation(ctx.journal, config, io);
      const data = finishedFromRecovery(rec, config.binary, clientMessageId, lostServer);
      return yield { type: 'runtime.finished', data: { ...data, ...(state.usage ? { usage: state.usage } : {}), outcome: { ...data.outcome, ...(abortNow()?.kind === 'timeout' ? { timed_out: true } : {}) } } };
    }
    const facts = { ...base, threadId, sessionId, abort: abortNow(), usage: state.usage, readbackBy: 'run' as const };
    if (!readback || !isTerminalStatus(readback.status)) {
      const why = readback ? `still ${readback.status} after ${config.readback_timeout_ms} ms` : 'missing from thread/turns/list';
      return yield { type: 'runtime.finished', data: { ...finishedData({ ...facts, turn: null, dispatch: 'bound', failure: { raw: 'readback', message: `turn ${turnId} is ${why}` } }), turn_id: turnId } };
    }
    if (notified && isTerminalStatus(notified.status) && notified.status !== readback.status) {
      const message = `turn/completed said ${notified.status} but the readback says ${readback.status}`;
      return yield { type: 'runtime.finished', data: { ...finishedData({ ...facts, turn: null, dispatch: 'bound', failure: { raw: 'readback:mismatch', message } }), turn_id: turnId } };
    }
    await identity.put({ dispatch: 'terminal', readback_status: readback.status });
    yield { type: 'runtime.finished', data: finishedData({ ...facts, turn: readback, dispatch: 'bound' }) };
  } catch (error) {
    await client.close();
    const failure = { raw: 'app_server', message: `codex app-server: ${errorMessage(error)}` };
    if (!mayHaveDispatched(identity.current)) return yield notSent({ threadId, failure });
    const rec = await recoverCodexAppServerOperation(ctx.journal, config, io);
    yield { type: 'runtime.finished', data: finishedFromRecovery(rec, config.binary, clientMessageId, failure.message) };
  }
}
