/**
 * One run of an ACP agent: the orchestrator behind `launch()` for `acp` and `hermes-acp`.
 *
 * States, each a function over the one run context (`acp-run-context.ts`):
 *   connect (pooled child, `initialize`, auth)   → acp-run-session.ts
 *   openSession (`session/new`, or `session/load` with its history replay swallowed)
 *   announceSession, followTurns (the prompt, then each follow-up from `send`) → acp-run-turns.ts
 *   settle (exactly one `runtime.finished`, then the channel closes).
 *
 * Cancel and mission timeout arrive through `ctx.signal`: `session/cancel` is sent, pending
 * permission requests are answered `cancelled`, and the prompt must answer `cancelled` within
 * `cancel_grace_ms`; otherwise the child is poisoned and killed. Any error poisons the child.
 */
import { join } from 'node:path';
import { UhError } from '../../../shared/errors.js';
import {
  abortReasonOf,
  type LaunchPlanV1,
  type RuntimeContextV1,
  type RuntimeSessionV1,
} from '../../../shared/runtime/v1/index.js';
import { extractRuntimeFinalMessageSentinel, resolveFinalMessage } from '../../../shared/sentinel.js';
import { logEvent, newAcpRun, type AcpRun, type AcpRunSpec } from './acp-run-context.js';
import { attach, connect, openSession } from './acp-run-session.js';
import { abortable, toFailure } from './acp-run-support.js';
import { announceSession, followTurns } from './acp-run-turns.js';
import type { AcpCommonSettings } from './acp-settings.js';
import { classifyAcp } from './classify-acp.js';

export type { AcpRunSpec } from './acp-run-context.js';

export function runAcp(
  plan: LaunchPlanV1<AcpCommonSettings>,
  ctx: RuntimeContextV1,
  spec: AcpRunSpec,
): RuntimeSessionV1 {
  const run = newAcpRun(plan, ctx, spec);
  void drive(run);
  return {
    events: run.channel,
    async send(message: string) {
      if (run.facts.finished) throw new UhError('invalid_input', 'the run has finished; nothing can be sent to it');
      run.emit({ type: 'runtime.steering', data: { message } });
      if (run.broker.answerPending(message)) return;
      run.followUps.push(message);
    },
  };
}

async function drive(run: AcpRun): Promise<void> {
  const { signal } = run.ctx;
  const onAbort = () => {
    run.broker.cancelAll();
    run.facts.cancelTurn?.();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    if (!signal.aborted) await converse(run);
  } catch (error) {
    run.facts.failure = toFailure(error, run.secrets);
    run.facts.client?.poison(run.facts.failure.message);
    run.emit(logEvent('error', run.facts.failure.message));
  } finally {
    signal.removeEventListener('abort', onAbort);
    await settle(run);
  }
}

/** connect → openSession → announceSession → followTurns; throws what ends the run early. */
async function converse(run: AcpRun): Promise<void> {
  const connected = await connect(run);
  try {
    const { client, init } = connected;
    const session = await abortable(
      openSession(run, client, init.agentCapabilities?.loadSession === true),
      run.ctx.signal,
    );
    const detach = attach(run, client, session.id);
    try {
      await announceSession(run, connected, session);
      await followTurns(run, client, session.id);
    } finally {
      detach();
    }
  } finally {
    connected.unNotice();
  }
}

/** Exactly one `runtime.finished` from what the run learned, then the channel closes. */
async function settle(run: AcpRun): Promise<void> {
  const { facts, ctx, config } = run;
  run.broker.cancelAll();
  facts.finished = true;
  if (facts.client) await run.spec.pool.release(facts.client, config.idle_ms);
  const abort = ctx.signal.aborted ? abortReasonOf(ctx.signal) : null;
  const program = config.command[0] ?? '';
  const outcome = classifyAcp(
    { stopReason: facts.stopReason, failure: facts.failure, abort, turnTimedOut: facts.turnTimedOut, program },
    run.spec.hints,
  );
  const text = run.transcript.assistantText;
  run.emit({
    type: 'runtime.finished',
    data: {
      outcome,
      ...resolveFinalMessage(extractRuntimeFinalMessageSentinel(text), text),
      ...(facts.sessionId ? { session_id: facts.sessionId } : {}),
      ...(Object.keys(facts.usage).length ? { usage: facts.usage } : {}),
      stop_reason: facts.stopReason,
      logs: [join(ctx.logDir, 'runtime.stderr.log')],
    },
  });
  run.channel.close();
}
