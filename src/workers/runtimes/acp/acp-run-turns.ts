/**
 * The turns state of an ACP run: announce the session (journal, `runtime.started`, mode), send
 * Hermes's reasoning preamble when needed, then the prompt and each follow-up from `send`, one
 * at a time, while the agent keeps ending its turns. A turn is cancelled by the run's signal or
 * its own deadline; an agent that ignores `session/cancel` past the grace is poisoned.
 */
import { addUsage } from '../../../shared/runtime/fold-events.js';
import type { AcpClient } from './acp-client.js';
import { endTurn } from './acp-events.js';
import type { PromptResponse } from './acp-protocol.js';
import { logEvent, type AcpRun } from './acp-run-context.js';
import { abortable, usageOfAnswer } from './acp-run-support.js';
import type { Connected, OpenedSession } from './acp-run-session.js';

/** Durable before any prompt: after a worker crash, recovery knows which agent session ran. */
export async function announceSession(run: AcpRun, { client, init }: Connected, session: OpenedSession): Promise<void> {
  const { ctx, config } = run;
  run.facts.sessionId = session.id;
  await ctx.journal.put({
    acp_session_id: session.id,
    acp_agent: init.agentInfo?.name ?? null,
    acp_resumed: session.resumed,
  });
  run.emit({
    type: 'runtime.started',
    data: {
      session_id: session.id,
      pid: client.pid,
      argv: config.command,
      protocol_version: init.protocolVersion,
      agent: init.agentInfo ?? null,
      load_session: init.agentCapabilities?.loadSession === true,
      resumed: session.resumed,
    },
  });
  if (config.session_mode) {
    await abortable(client.setMode(session.id, config.session_mode, config.request_timeout_ms), ctx.signal);
    run.emit(logEvent('info', `session mode set to ${config.session_mode}`));
  }
}

/** The preamble, the prompt, then follow-ups while the agent ends its turns; the last stopReason lands in `facts`. */
export async function followTurns(run: AcpRun, c: AcpClient, sessionId: string): Promise<void> {
  const { facts, ctx } = run;
  const preamble = reasoningPreamble(run, c, sessionId);
  if (preamble && !ctx.signal.aborted) {
    const answer = await sendPrompt(run, c, sessionId, preamble);
    run.transcript.assistantText = ''; // the preamble's reply is not the mission's answer
    run.emit(logEvent('info', `reasoning preamble "${preamble}" answered ${answer.stopReason}`));
    if (answer.stopReason !== 'end_turn') facts.stopReason = answer.stopReason;
  }
  let next: string | undefined = facts.stopReason === null ? run.plan.prompt : undefined;
  while (next !== undefined && !ctx.signal.aborted) {
    const answer = await sendPrompt(run, c, sessionId, next);
    facts.stopReason = answer.stopReason;
    const usage = usageOfAnswer(answer);
    if (usage) {
      facts.usage = addUsage(facts.usage, usage);
      run.emit({ type: 'runtime.usage', data: usage });
    }
    next = facts.stopReason === 'end_turn' ? run.followUps.shift() : undefined;
  }
  if (run.followUps.length > 0) {
    run.emit(
      logEvent(
        'warn',
        `${run.followUps.length} follow-up message(s) not sent: the turn ended ${facts.stopReason ?? 'early'}`,
      ),
    );
  }
}

/** One prompt turn; resolves with the agent's answer (or throws a transport/remote error). */
export async function sendPrompt(run: AcpRun, c: AcpClient, sessionId: string, text: string): Promise<PromptResponse> {
  const { config, facts } = run;
  const local = new AbortController();
  let graceTimer: NodeJS.Timeout | undefined;
  facts.cancelTurn = () => {
    if (graceTimer) return;
    run.broker.cancelAll();
    c.cancel(sessionId);
    graceTimer = setTimeout(() => {
      run.emit(
        logEvent('warn', `the agent did not answer session/cancel within ${config.cancel_grace_ms} ms; killing it`),
      );
      c.poison('ignored session/cancel');
      local.abort();
    }, config.cancel_grace_ms);
  };
  const deadline = config.turn_timeout_ms
    ? setTimeout(() => {
        facts.turnTimedOut = true;
        facts.cancelTurn?.();
      }, config.turn_timeout_ms)
    : undefined;
  if (run.ctx.signal.aborted) facts.cancelTurn();
  try {
    return await c.prompt(sessionId, text, local.signal);
  } finally {
    clearTimeout(graceTimer);
    clearTimeout(deadline);
    facts.cancelTurn = undefined;
    endTurn(run.transcript);
  }
}

/** Hermes's `/reasoning <level>`, sent as its own turn only when the level changed on this child. */
function reasoningPreamble(run: AcpRun, c: AcpClient, sessionId: string): string | null {
  const level = run.config.reasoning_level;
  if (!level) return null;
  const key = `reasoning:${sessionId}`;
  if (c.memo.get(key) === level) return null;
  c.memo.set(key, level);
  return `/reasoning ${level}`;
}
