/**
 * The terminal event data of a run, built from the exact turn as read back (never from a
 * notification alone). Pure. The final message is the turn's last `agentMessage` item: its
 * sentinel block when it has one, else the whole text.
 */
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import type { AbortReasonV1 } from '../../../shared/runtime/v1/runtime-context.js';
import type { RuntimeFinishedData } from '../../../shared/runtime/v1/runtime-event.js';
import { extractRuntimeFinalMessageSentinel, resolveFinalMessage } from '../../../shared/sentinel.js';
import { classifyCodexAppServer, type CodexAppServerClassifyInput } from './classify-codex-app-server.js';
import { lastAgentMessage, type TerminalTurnStatus, type Turn } from './codex-app-server-protocol.js';

export interface FinishFacts {
  binary: string;
  threadId: string | null;
  sessionId?: string | null;
  turn: Turn | null;
  clientMessageId: string | null;
  abort: AbortReasonV1 | null;
  dispatch: CodexAppServerClassifyInput['dispatch'];
  failure?: CodexAppServerClassifyInput['failure'];
  spawnError?: { code: string; message: string };
  usage?: Usage | null;
  /** How the terminal status was learnt: the live run's readback, or recovery's. */
  readbackBy?: 'run' | 'recover';
  extra?: Record<string, unknown>;
}

export function isTerminalStatus(status: Turn['status']): status is TerminalTurnStatus {
  return status !== 'inProgress';
}

export function finishedData(f: FinishFacts): RuntimeFinishedData {
  const terminal = f.turn && isTerminalStatus(f.turn.status) ? f.turn : null;
  const outcome = classifyCodexAppServer({
    binary: f.binary,
    abort: f.abort,
    dispatch: f.dispatch,
    readback: terminal ? { status: terminal.status as TerminalTurnStatus, error: terminal.error ?? null } : null,
    ...(f.failure ? { failure: f.failure } : {}),
    ...(f.spawnError ? { spawnError: f.spawnError } : {}),
  });
  const text = terminal ? lastAgentMessage(terminal) : null;
  const final = resolveFinalMessage(text === null ? null : extractRuntimeFinalMessageSentinel(text), text ?? '');
  return {
    outcome,
    ...final,
    ...(f.threadId ? { thread_id: f.threadId } : {}),
    ...(f.sessionId ? { session_id: f.sessionId } : f.threadId ? { session_id: f.threadId } : {}),
    ...(f.turn ? { turn_id: f.turn.id } : {}),
    ...(f.usage ? { usage: f.usage } : {}),
    readback_status: terminal ? terminal.status : null,
    ...(f.readbackBy && terminal ? { readback_by: f.readbackBy } : {}),
    client_message_id: f.clientMessageId,
    /** `unknown` tells the pipeline the operation state is UNKNOWN (dispatch not provable). */
    dispatch: outcome.raw === 'dispatch:unknown' ? 'unknown' : f.dispatch === 'not_sent' ? 'not_sent' : 'bound',
    ...(terminal?.error
      ? { turn_error: { message: terminal.error.message, codex_error_info: terminal.error.codexErrorInfo ?? null } }
      : {}),
    ...(f.extra ?? {}),
  };
}
