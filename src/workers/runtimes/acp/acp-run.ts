/**
 * One run of an ACP agent: the orchestrator behind `launch()` for `acp` and `hermes-acp`.
 *
 * States: connecting (pooled child, `initialize`, auth) → session (`session/new`, or `session/load`
 * with its history replay swallowed) → turns (the prompt, then each follow-up from `send`, one at
 * a time) → finished (exactly one `runtime.finished`, then the channel closes).
 *
 * Cancel and mission timeout arrive through `ctx.signal`: `session/cancel` is sent, pending
 * permission requests are answered `cancelled`, and the prompt must answer `cancelled` within
 * `cancel_grace_ms`; otherwise the child is poisoned and killed. Any error poisons the child.
 */
import { join } from 'node:path';
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import { UhError } from '../../../shared/errors.js';
import { EventChannel } from '../../../shared/runtime/event-channel.js';
import { abortReasonOf, type LaunchPlanV1, type RuntimeContextV1, type RuntimeEventV1, type RuntimeSessionV1 } from '../../../shared/runtime/v1/index.js';
import { extractRuntimeFinalMessageSentinel, resolveFinalMessage } from '../../../shared/sentinel.js';
import { JsonRpcRemoteError } from '../../../shared/transport/jsonrpc-errors.js';
import type { AcpClient } from './acp-client.js';
import { endTurn, newTranscriptState, translateSessionUpdate } from './acp-events.js';
import { noticeEvent, toFailure, usageOf, AuthRequiredError } from './acp-run-support.js';
import { selectAuthMethod } from './acp-auth.js';
import { AcpProtocolError } from './acp-protocol-error.js';
import type { AcpClientPool } from './acp-pool.js';
import { ACP_AUTH_REQUIRED_CODE, ACP_PROTOCOL_VERSION, type PromptResponse } from './acp-protocol.js';
import type { AcpCommonSettings } from './acp-settings.js';
import { classifyAcp, type AcpFailure, type AcpHints } from './classify-acp.js';
import { AcpPermissionBroker } from './acp-permission-broker.js';
import { addUsage } from '../../../shared/runtime/fold-events.js';

export interface AcpRunSpec {
  hints: AcpHints;
  pool: AcpClientPool;
}

export function runAcp(plan: LaunchPlanV1<AcpCommonSettings>, ctx: RuntimeContextV1, spec: AcpRunSpec): RuntimeSessionV1 {
  const config = plan.config;
  const channel = new EventChannel<RuntimeEventV1>();
  const emit = (event: RuntimeEventV1) => channel.push(event);
  const transcript = newTranscriptState();
  const followUps: string[] = [];
  const broker = new AcpPermissionBroker(config, ctx.workDir, emit);
  let finished = false;
  let replaying = false;
  let failure: AcpFailure | null = null;
  let stopReason: string | null = null;
  let turnTimedOut = false;
  let sessionId: string | undefined;
  let usage: Usage = {};
  let client: AcpClient | undefined;
  let cancelTurn: (() => void) | undefined;
  const program = config.command[0] ?? '';

  const onAbort = () => {
    broker.cancelAll();
    cancelTurn?.();
  };

  async function openSession(c: AcpClient, loadSession: boolean): Promise<{ id: string; resumed: boolean }> {
    const wanted = config.session_id;
    if (wanted && c.knownSessions.has(wanted)) return { id: wanted, resumed: true }; // live on this child: no reload
    if (wanted && loadSession) {
      replaying = true;
      const detach = attach(c, wanted);
      try {
        const loaded = await c.loadSession(wanted, ctx.workDir, config.request_timeout_ms);
        if (loaded) {
          // Older agents replay after the reply: keep treating updates as replay for a moment.
          if (config.load_settle_ms > 0) await delay(config.load_settle_ms, ctx.signal);
          return { id: wanted, resumed: true };
        }
      } finally {
        replaying = false;
        if (transcript.replayed > 0) emit({ type: 'runtime.log', data: { level: 'info', message: `session/load replayed ${transcript.replayed} history update(s); not treated as new output` } });
      }
      detach();
      emit({ type: 'runtime.log', data: { level: 'warn', message: `the agent does not know session ${wanted}; starting a new session` } });
    } else if (wanted) {
      emit({ type: 'runtime.log', data: { level: 'warn', message: `the agent cannot load sessions (no loadSession capability); starting a new session instead of ${wanted}` } });
    }
    return { id: await newSessionWithAuth(c), resumed: false };
  }

  async function authenticate(c: AcpClient): Promise<boolean> {
    const selection = selectAuthMethod(c.initialized?.authMethods ?? [], config.auth_method_id);
    if ('error' in selection) throw new AuthRequiredError(selection.error);
    if ('none' in selection) return false;
    const accepted = await c.authenticate(selection.method.id, config.request_timeout_ms);
    emit({ type: 'runtime.log', data: { level: accepted ? 'info' : 'warn', message: `authenticate ${selection.method.id}: ${accepted ? 'accepted' : 'not accepted (null result)'}` } });
    return true;
  }

  async function newSessionWithAuth(c: AcpClient): Promise<string> {
    try {
      return await c.newSession(ctx.workDir, config.request_timeout_ms);
    } catch (error) {
      if (!(JsonRpcRemoteError.isInstance(error) && error.code === ACP_AUTH_REQUIRED_CODE) || config.auth_mode !== 'on_demand') throw error;
      if (!(await authenticate(c))) throw new AuthRequiredError(`session/new: ${error.rpcMessage}`);
      try {
        return await c.newSession(ctx.workDir, config.request_timeout_ms);
      } catch (retry) {
        if (JsonRpcRemoteError.isInstance(retry) && retry.code === ACP_AUTH_REQUIRED_CODE) throw new AuthRequiredError(`session/new after authenticate: ${retry.rpcMessage}`);
        throw retry;
      }
    }
  }

  function attach(c: AcpClient, id: string): () => void {
    return c.attach(id, {
      onUpdate: (update) => {
        for (const event of translateSessionUpdate(update, transcript, replaying)) emit(event);
      },
      onPermission: (request, signal) => {
        // Some agents (Qwen Code) announce a tool only in its permission request: keep its title.
        const { toolCallId, title } = request.toolCall;
        if (title && !transcript.turnTools.has(toolCallId)) transcript.turnTools.set(toolCallId, title);
        return broker.handle(request, signal);
      },
    });
  }

  /** One prompt turn; resolves with the agent's answer (or throws a transport/remote error). */
  async function turn(c: AcpClient, id: string, text: string): Promise<PromptResponse> {
    const local = new AbortController();
    let graceTimer: NodeJS.Timeout | undefined;
    let cancelled = false;
    cancelTurn = () => {
      if (cancelled) return;
      cancelled = true;
      broker.cancelAll();
      c.cancel(id);
      graceTimer = setTimeout(() => {
        emit({ type: 'runtime.log', data: { level: 'warn', message: `the agent did not answer session/cancel within ${config.cancel_grace_ms} ms; killing it` } });
        c.poison('ignored session/cancel');
        local.abort();
      }, config.cancel_grace_ms);
    };
    const deadline = config.turn_timeout_ms
      ? setTimeout(() => {
          turnTimedOut = true;
          cancelTurn?.();
        }, config.turn_timeout_ms)
      : undefined;
    if (ctx.signal.aborted) cancelTurn();
    try {
      return await c.prompt(id, text, local.signal);
    } finally {
      if (graceTimer) clearTimeout(graceTimer);
      if (deadline) clearTimeout(deadline);
      cancelTurn = undefined;
      endTurn(transcript);
    }
  }

  async function drive(): Promise<void> {
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    try {
      if (ctx.signal.aborted) return;
      const c = spec.pool.acquire({
        spawn: ctx.spawn,
        argv: config.command,
        cwd: ctx.workDir,
        env: { ...ctx.env, ...config.env },
        stderrFile: join(ctx.logDir, 'runtime.stderr.log'),
        killGraceMs: config.kill_grace_ms,
      }, { argv: config.command, env: config.env });
      client = c;
      const unNotice = c.onNotice((notice) => emit(noticeEvent(notice)));
      try {
        const init = await abortable(c.initialize(config.request_timeout_ms), ctx.signal);
        if (init.protocolVersion !== ACP_PROTOCOL_VERSION) {
          throw new AcpProtocolError(`the agent speaks ACP protocol version ${init.protocolVersion}; uh speaks ${ACP_PROTOCOL_VERSION}`);
        }
        if (config.auth_mode === 'upfront' && !c.knownSessions.size) await abortable(authenticate(c), ctx.signal);
        const loadSession = init.agentCapabilities?.loadSession === true;
        const session = await abortable(openSession(c, loadSession), ctx.signal);
        sessionId = session.id;
        // Durable before any prompt: after a worker crash, recovery knows which agent session ran.
        await ctx.journal.put({ acp_session_id: session.id, acp_agent: init.agentInfo?.name ?? null, acp_resumed: session.resumed });
        const detach = attach(c, session.id);
        emit({
          type: 'runtime.started',
          data: {
            session_id: session.id,
            pid: c.pid,
            argv: config.command,
            protocol_version: init.protocolVersion,
            agent: init.agentInfo ?? null,
            load_session: loadSession,
            resumed: session.resumed,
          },
        });
        try {
          if (config.session_mode) {
            await abortable(c.setMode(session.id, config.session_mode, config.request_timeout_ms), ctx.signal);
            emit({ type: 'runtime.log', data: { level: 'info', message: `session mode set to ${config.session_mode}` } });
          }
          const preamble = reasoningPreamble(c, session.id);
          if (preamble && !ctx.signal.aborted) {
            const answer = await turn(c, session.id, preamble);
            transcript.assistantText = ''; // the preamble's reply is not the mission's answer
            emit({ type: 'runtime.log', data: { level: 'info', message: `reasoning preamble "${preamble}" answered ${answer.stopReason}` } });
            if (answer.stopReason !== 'end_turn') stopReason = answer.stopReason;
          }
          let next: string | undefined = stopReason === null ? plan.prompt : undefined;
          while (next !== undefined && !ctx.signal.aborted) {
            const answer = await turn(c, session.id, next);
            stopReason = answer.stopReason;
            const turnUsage = usageOf(answer.usage);
            if (turnUsage) {
              usage = addUsage(usage, turnUsage);
              emit({ type: 'runtime.usage', data: turnUsage });
            }
            next = stopReason === 'end_turn' ? followUps.shift() : undefined;
          }
          if (followUps.length > 0) {
            emit({ type: 'runtime.log', data: { level: 'warn', message: `${followUps.length} follow-up message(s) not sent: the turn ended ${stopReason ?? 'early'}` } });
          }
        } finally {
          detach();
        }
      } catch (error) {
        failure = toFailure(error);
        c.poison(failure.message);
        emit({ type: 'runtime.log', data: { level: 'error', message: failure.message } });
      } finally {
        unNotice();
      }
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      broker.cancelAll();
      finished = true;
      if (client) await spec.pool.release(client, config.idle_ms);
      const outcome = classifyAcp(
        { stopReason, failure, abort: ctx.signal.aborted ? abortReasonOf(ctx.signal) : null, turnTimedOut, program },
        spec.hints,
      );
      const text = transcript.assistantText;
      emit({
        type: 'runtime.finished',
        data: {
          outcome,
          ...resolveFinalMessage(extractRuntimeFinalMessageSentinel(text), text),
          ...(sessionId ? { session_id: sessionId } : {}),
          ...(Object.keys(usage).length ? { usage } : {}),
          stop_reason: stopReason,
          logs: [join(ctx.logDir, 'runtime.stderr.log')],
        },
      });
      channel.close();
    }
  }

  /** Hermes's `/reasoning <level>`, sent as its own turn only when the level changed on this child. */
  function reasoningPreamble(c: AcpClient, id: string): string | null {
    const level = config.reasoning_level;
    if (!level) return null;
    const key = `reasoning:${id}`;
    if (c.memo.get(key) === level) return null;
    c.memo.set(key, level);
    return `/reasoning ${level}`;
  }

  void drive();

  return {
    events: channel,
    async send(message: string) {
      if (finished) throw new UhError('invalid_input', 'the run has finished; nothing can be sent to it');
      emit({ type: 'runtime.steering', data: { message } });
      if (broker.answerPending(message)) return;
      followUps.push(message);
    },
  };
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Reject as soon as the signal aborts (the work goes on; the child is poisoned by the caller). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
