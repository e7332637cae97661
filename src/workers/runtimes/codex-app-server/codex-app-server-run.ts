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
 *
 * Each state is a function over one {@link RunContext}; it returns its typed result, or a
 * {@link Stop} carrying the run's one `runtime.finished` event.
 */
import { effectiveCodexSandbox } from '../codex-shared/codex-common-settings.js';
import type { RuntimeContextV1, RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { abortReasonOf } from '../../../shared/runtime/v1/runtime-context.js';
import type { RuntimeFinishedData } from '../../../shared/runtime/v1/runtime-event.js';
import type { RecoveryV1 } from '../../../shared/runtime/v1/runtime-recovery.js';
import { errorMessage } from '../../../shared/errors.js';
import { JsonRpcRemoteError, JsonRpcTransportError } from '../../../shared/transport/jsonrpc-errors.js';
import { z } from 'zod';
import { listAllTurns, startAppServer, type AppServerClient, type AppServerInput } from './codex-app-server-client.js';
import { decideApproval } from './codex-app-server-approvals.js';
import {
  initialTurnState,
  translateAppServerNotification,
  type AppServerTurnState,
} from './codex-app-server-events.js';
import { finishedData, isTerminalStatus, type FinishFacts } from './codex-app-server-finish.js';
import {
  IdentityJournal,
  clientMessageIdOf,
  mayHaveDispatched,
  type AppServerJournal,
} from './codex-app-server-identity.js';
import { missionThreadOf, rememberMissionThread } from './codex-app-server-mission-threads.js';
import {
  ThreadStartResultSchema,
  TurnNotificationSchema,
  TurnStartResultSchema,
  type Turn,
} from './codex-app-server-protocol.js';
import { recoverCodexAppServerOperation } from './codex-app-server-recover.js';
import type { CodexAppServerSettings } from './codex-app-server-settings.js';

const Anything = z.unknown();
const READBACK_POLL_MS = 150;
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

type FinishedEvent = Extract<RuntimeEventV1, { type: 'runtime.finished' }>;
/** A state ended the run: this is its one terminal event. */
interface Stop {
  stop: FinishedEvent;
}
type Thread = z.infer<typeof ThreadStartResultSchema>['thread'];

/** Everything the states share; `threadId` is set once a thread is open (the error path reads it). */
interface RunContext {
  config: CodexAppServerSettings;
  prompt: string;
  rt: RuntimeContextV1;
  identity: IdentityJournal;
  record: AppServerJournal;
  clientMessageId: string;
  io: { spawn: RuntimeContextV1['spawn']; env: RuntimeContextV1['env']; logDir: string; workDir: string };
  /** Approval answers made while the turn runs, yielded at the next step of the follow loop. */
  permissions: RuntimeEventV1[];
  turnState: AppServerTurnState;
  threadId: string | null;
}

/** How the follow state ended: the turn's own turn/completed, or a reason to recover instead. */
type Followed = { notified: Turn | null; lostServer: string | null };

const finished = (data: RuntimeFinishedData): FinishedEvent => ({ type: 'runtime.finished', data });
const isStop = (x: unknown): x is Stop => typeof x === 'object' && x !== null && 'stop' in x;
const abortNow = (c: RunContext) => (c.rt.signal.aborted ? abortReasonOf(c.rt.signal) : null);

function notSent(c: RunContext, facts: Partial<FinishFacts>): FinishedEvent {
  return finished(
    finishedData({
      binary: c.config.binary,
      clientMessageId: c.clientMessageId,
      threadId: null,
      turn: null,
      abort: abortNow(c),
      dispatch: 'not_sent',
      ...facts,
    }),
  );
}

function finishedFromRecovery(
  rec: RecoveryV1,
  binary: string,
  clientMessageId: string,
  why: string,
): RuntimeFinishedData {
  if (rec.state === 'settled' && rec.finished)
    return { ...rec.finished, recovery: { state: rec.state, reason: rec.reason } };
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

/** Read the turn with a fresh app server (read only) and finish from what it finds. */
async function recoverFinished(
  c: RunContext,
  why: string,
  clientMessageId = c.clientMessageId,
): Promise<RuntimeFinishedData> {
  const rec = await recoverCodexAppServerOperation(c.rt.journal, c.config, c.io);
  return finishedFromRecovery(rec, c.config.binary, clientMessageId, why);
}

export async function* runCodexAppServer(
  config: CodexAppServerSettings,
  prompt: string,
  ctx: RuntimeContextV1,
): AsyncGenerator<RuntimeEventV1> {
  const c = await runContext(config, prompt, ctx);
  if (mayHaveDispatched(c.record)) return yield* recoverInsteadOfDispatch(c);
  if (ctx.signal.aborted) return yield notSent(c, {});
  const client = await startServer(c);
  if (isStop(client)) return yield client.stop;
  try {
    const thread = yield* openThread(c, client);
    const baseline = await takeBaseline(c, client, thread);
    if (isStop(baseline)) return yield baseline.stop;
    const turnId = await dispatchTurn(c, client, baseline);
    if (isStop(turnId)) return yield turnId.stop;
    yield {
      type: 'runtime.started',
      data: {
        thread_id: thread.id,
        turn_id: turnId,
        session_id: thread.sessionId ?? thread.id,
        pid: client.child.pid,
        client_message_id: c.clientMessageId,
        thread_origin: thread.origin,
      },
    };
    const followed = yield* followTurn(c, client, turnId);
    const readback = followed.lostServer === null ? await readBack(c, client, turnId) : null;
    await client.close();
    yield yield* settle(c, thread, turnId, followed, readback);
  } catch (error) {
    await client.close();
    yield await failAfterError(c, error);
  }
}

async function runContext(config: CodexAppServerSettings, prompt: string, rt: RuntimeContextV1): Promise<RunContext> {
  const identity = new IdentityJournal(rt.journal);
  const record = await identity.load();
  return {
    config,
    prompt,
    rt,
    identity,
    record,
    clientMessageId: clientMessageIdOf(rt.mission.operationId, rt.mission.attempt),
    io: { spawn: rt.spawn, env: rt.env, logDir: rt.logDir, workDir: rt.workDir },
    permissions: [],
    turnState: initialTurnState(),
    threadId: null,
  };
}

/** recover?: a re-delivered or retried operation; turn/start may already have been sent. Never again. */
async function* recoverInsteadOfDispatch(c: RunContext): AsyncGenerator<RuntimeEventV1> {
  yield {
    type: 'runtime.log',
    data: {
      level: 'warn',
      message: 'turn/start may already have been sent for this operation: recovering, not dispatching',
    },
  };
  const rec = await recoverCodexAppServerOperation(c.rt.journal, c.config, c.io);
  if (rec.thread_id)
    yield {
      type: 'runtime.started',
      data: { thread_id: rec.thread_id, ...(rec.turn_id ? { turn_id: rec.turn_id } : {}), recovered: true },
    };
  yield finished(
    finishedFromRecovery(
      rec,
      c.config.binary,
      c.record.client_message_id ?? c.clientMessageId,
      'an earlier attempt may have started the turn',
    ),
  );
}

/** start: spawn and initialize; approval requests are answered by policy and reported. */
async function startServer(c: RunContext): Promise<AppServerClient | Stop> {
  const { config, rt } = c;
  try {
    return await startAppServer({
      config,
      ...c.io,
      cwd: rt.workDir,
      name: 'codex-app-server',
      onRequest: (method, params) => {
        const answer = decideApproval(method, params, rt.workDir, config.approvals);
        if (!answer) throw JsonRpcRemoteError.methodNotFound(method);
        c.permissions.push({
          type: 'runtime.permission',
          data: {
            request: { method, params },
            answer: answer.result,
            accepted: answer.accepted,
            reason: answer.reason,
          },
        });
        return answer.result;
      },
    });
  } catch (error) {
    if (JsonRpcTransportError.isInstance(error) && error.kind === 'spawn') {
      return { stop: notSent(c, { spawnError: { code: error.details.code ?? 'ENOENT', message: error.message } }) };
    }
    return {
      stop: notSent(c, {
        failure: { raw: 'initialize', message: `codex app-server did not initialize: ${errorMessage(error)}` },
      }),
    };
  }
}

/** thread: this operation's own (an earlier attempt that never dispatched), else the mission's, else new. */
async function* openThread(
  c: RunContext,
  client: AppServerClient,
): AsyncGenerator<RuntimeEventV1, Thread & { origin: 'started' | 'resumed' }> {
  const { config, rt } = c;
  const resumeId =
    c.record.thread_id ??
    (config.mission_thread === 'resume' ? missionThreadOf(client.codexHome, rt.mission.missionId) : null);
  const threadParams = {
    cwd: rt.workDir,
    sandbox: effectiveCodexSandbox(config.sandbox, rt.isolation),
    approvalPolicy: config.approval_policy,
    ...(config.model ? { model: config.model } : {}),
  };
  let origin: 'started' | 'resumed' = 'started';
  let thread: Thread | null = null;
  if (resumeId) {
    try {
      thread = (
        await client.call(
          'thread/resume',
          { threadId: resumeId, ...threadParams, excludeTurns: true },
          ThreadStartResultSchema,
        )
      ).thread;
      origin = 'resumed';
    } catch (error) {
      if (!JsonRpcRemoteError.isInstance(error)) throw error;
      yield {
        type: 'runtime.log',
        data: {
          level: 'warn',
          message: `cannot resume thread ${resumeId} (${error.rpcMessage}): starting a new thread`,
        },
      };
    }
  }
  thread ??= (await client.call('thread/start', { ...threadParams, serviceName: 'uh' }, ThreadStartResultSchema))
    .thread;
  c.threadId = thread.id;
  await c.identity.put({ codex_home: client.codexHome, thread_id: thread.id, thread_origin: origin });
  try {
    rememberMissionThread(
      client.codexHome,
      rt.mission.missionId,
      thread.id,
      rt.mission.operationId,
      new Date(rt.now()),
    );
  } catch (error) {
    // Only follow-ups lose their thread (they start a new one); this run is unaffected.
    yield {
      type: 'runtime.log',
      data: {
        level: 'warn',
        message: `cannot record the mission's thread in ${client.codexHome}: ${errorMessage(error)}`,
      },
    };
  }
  return { ...thread, origin };
}

/** baseline: every turn already in the thread (none in a thread we just started); a busy thread is refused. */
async function takeBaseline(
  c: RunContext,
  client: AppServerClient,
  thread: Thread & { origin: 'started' | 'resumed' },
): Promise<string[] | Stop> {
  const baseline = thread.origin === 'started' ? [] : (await listAllTurns(client, thread.id)).map((t) => t.id);
  await c.identity.put({ baseline_turn_ids: baseline });
  if (thread.status?.type === 'active') {
    return {
      stop: notSent(c, {
        threadId: thread.id,
        failure: { raw: 'thread_busy', message: `thread ${thread.id} has an active turn; refusing to start another` },
      }),
    };
  }
  if (c.rt.signal.aborted) return { stop: notSent(c, { threadId: thread.id }) };
  return baseline;
}

/** dispatch: journal first, then the one turn/start of this operation; returns the bound turn id. */
async function dispatchTurn(
  c: RunContext,
  client: AppServerClient,
  baseline: readonly string[],
): Promise<string | Stop> {
  const threadId = c.threadId as string;
  await c.identity.put({ client_message_id: c.clientMessageId, dispatch: 'sending' });
  let started: Turn;
  try {
    const input = [{ type: 'text', text: c.prompt, text_elements: [] }];
    started = (
      await client.call(
        'turn/start',
        { threadId, clientUserMessageId: c.clientMessageId, input },
        TurnStartResultSchema,
      )
    ).turn;
  } catch (error) {
    if (JsonRpcRemoteError.isInstance(error)) {
      return {
        stop: notSent(c, {
          threadId,
          failure: { raw: `turn/start:${error.code}`, message: `turn/start was refused: ${error.rpcMessage}` },
        }),
      };
    }
    // Lost reply: the turn may exist. Read it with a fresh app server; never send again.
    await client.close();
    return { stop: finished(await recoverFinished(c, `turn/start got no answer (${errorMessage(error)})`)) };
  }
  if (baseline.includes(started.id)) {
    const failure = { raw: 'turn_not_new', message: `turn/start answered an existing turn ${started.id}` };
    return {
      stop: finished(
        finishedData({
          binary: c.config.binary,
          clientMessageId: c.clientMessageId,
          threadId,
          turn: null,
          abort: abortNow(c),
          dispatch: 'sent',
          failure,
        }),
      ),
    };
  }
  c.turnState.turnId = started.id;
  await c.identity.put({ turn_id: started.id, dispatch: 'bound' });
  return started.id;
}

/**
 * follow: our turn's notifications until turn/completed, the server's death, or an unheeded
 * interrupt. The server refuses turn/interrupt ("no active turn") until the turn has really
 * started: an abort before `turn/started` is held and sent when it arrives.
 */
async function* followTurn(
  c: RunContext,
  client: AppServerClient,
  turnId: string,
): AsyncGenerator<RuntimeEventV1, Followed> {
  const { config, rt } = c;
  const aborted = new Promise<'abort'>((resolve) => {
    if (rt.signal.aborted) resolve('abort');
    else rt.signal.addEventListener('abort', () => resolve('abort'), { once: true });
  });
  let nextInput = client.next();
  let grace: Promise<'grace'> | null = null;
  let turnActive = false;
  let interruptPending = false;
  const interrupt = async function* (): AsyncGenerator<RuntimeEventV1> {
    interruptPending = false;
    const answer = await client
      .call('turn/interrupt', { threadId: c.threadId, turnId }, Anything, config.request_timeout_ms)
      .then(
        () => 'ok',
        (e: unknown) => errorMessage(e),
      );
    yield { type: 'runtime.log', data: { level: 'debug', message: `turn/interrupt: ${answer}` } };
    grace = delay(config.interrupt_grace_ms).then(() => 'grace' as const);
  };
  for (;;) {
    const got: AppServerInput | 'abort' | 'grace' = await Promise.race([nextInput, grace ?? aborted]);
    yield* c.permissions.splice(0);
    if (got === 'abort') {
      const reason = abortReasonOf(rt.signal);
      await c.identity.put({ interrupt: reason.kind });
      yield { type: 'runtime.log', data: { level: 'info', message: `${reason.message}: interrupting turn ${turnId}` } };
      // Until the turn is active, a bounded wait for turn/started (then the interrupt goes).
      grace = delay(config.interrupt_grace_ms + config.request_timeout_ms).then(() => 'grace' as const);
      if (turnActive) yield* interrupt();
      else interruptPending = true;
      continue;
    }
    if (got === 'grace')
      return {
        notified: null,
        lostServer: `turn ${turnId} did not end within ${config.interrupt_grace_ms} ms of turn/interrupt`,
      };
    nextInput = client.next();
    if (got.kind === 'closed') return { notified: null, lostServer: `the app server went away: ${got.message}` };
    if (got.method === 'turn/started' || got.method === 'turn/completed') {
      const p = TurnNotificationSchema.safeParse(got.params);
      if (!p.success || p.data.turn.id !== turnId) continue;
      if (got.method === 'turn/completed') return { notified: p.data.turn, lostServer: null };
      turnActive = true;
      if (interruptPending) yield* interrupt();
      continue;
    }
    yield* translateAppServerNotification(got.method, got.params, c.turnState);
  }
}

/** readback: the exact turn from thread/turns/list, polled until terminal or the readback budget ends. */
async function readBack(c: RunContext, client: AppServerClient, turnId: string): Promise<Turn | null> {
  const deadline = c.rt.now() + c.config.readback_timeout_ms;
  for (;;) {
    const readback = (await listAllTurns(client, c.threadId as string)).find((t) => t.id === turnId) ?? null;
    if ((readback && isTerminalStatus(readback.status)) || c.rt.now() >= deadline) return readback;
    await delay(READBACK_POLL_MS);
  }
}

/** finished: from the readback (never from the notification alone), or from a fresh server's recovery. */
async function* settle(
  c: RunContext,
  thread: Thread,
  turnId: string,
  followed: Followed,
  readback: Turn | null,
): AsyncGenerator<RuntimeEventV1, FinishedEvent> {
  const { config } = c;
  const usage = c.turnState.usage;
  if (followed.lostServer !== null) {
    yield {
      type: 'runtime.log',
      data: { level: 'warn', message: `${followed.lostServer}: reading the turn with a fresh app server` },
    };
    const data = await recoverFinished(c, followed.lostServer);
    return finished({
      ...data,
      ...(usage ? { usage } : {}),
      outcome: { ...data.outcome, ...(abortNow(c)?.kind === 'timeout' ? { timed_out: true } : {}) },
    });
  }
  const facts = {
    binary: config.binary,
    clientMessageId: c.clientMessageId,
    threadId: thread.id,
    sessionId: thread.sessionId ?? thread.id,
    abort: abortNow(c),
    usage,
    readbackBy: 'run' as const,
  };
  const failed = (raw: string, message: string) =>
    finished({
      ...finishedData({ ...facts, turn: null, dispatch: 'bound', failure: { raw, message } }),
      turn_id: turnId,
    });
  if (!readback || !isTerminalStatus(readback.status)) {
    const why = readback
      ? `still ${readback.status} after ${config.readback_timeout_ms} ms`
      : 'missing from thread/turns/list';
    return failed('readback', `turn ${turnId} is ${why}`);
  }
  const notified = followed.notified;
  if (notified && isTerminalStatus(notified.status) && notified.status !== readback.status) {
    return failed(
      'readback:mismatch',
      `turn/completed said ${notified.status} but the readback says ${readback.status}`,
    );
  }
  await c.identity.put({ dispatch: 'terminal', readback_status: readback.status });
  return finished(finishedData({ ...facts, turn: readback, dispatch: 'bound' }));
}

/** Any other error: not sent if the journal proves it, else recover (the turn may exist). */
async function failAfterError(c: RunContext, error: unknown): Promise<FinishedEvent> {
  const failure = { raw: 'app_server', message: `codex app-server: ${errorMessage(error)}` };
  if (!mayHaveDispatched(c.identity.current)) return notSent(c, { threadId: c.threadId, failure });
  return finished(await recoverFinished(c, failure.message));
}
