/**
 * The outcome of an ACP run, pure, in fixed priority: could not start → auth → mission timeout →
 * cancel → turn deadline → rate limit → agent exited → request deadline → error answer → protocol
 * → the prompt's stopReason.
 */
import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import type { AbortReasonV1 } from '../../../shared/runtime/v1/runtime-context.js';

export type AcpFailure =
  | { kind: 'spawn'; code: string; message: string }
  | { kind: 'auth_required'; message: string }
  | { kind: 'exited'; message: string; exitCode: number | null; signal: string | null }
  | { kind: 'request_timeout'; method: string; message: string }
  | { kind: 'remote'; method: string; code: number; message: string }
  | { kind: 'protocol'; message: string };

export interface AcpRunFacts {
  /** The last prompt's stopReason, as the agent sent it; null when no prompt answered. */
  stopReason: string | null;
  failure: AcpFailure | null;
  /** Set when the run's signal was aborted (cancel or mission timeout). */
  abort: AbortReasonV1 | null;
  turnTimedOut: boolean;
  /** The agent's program (`command[0]`). */
  program: string;
}

/** Runtime-specific operator hints. */
export interface AcpHints {
  /** How to log the agent in, e.g. `run "hermes setup" on this worker`. */
  auth: string;
  /** How to install the agent. */
  install: string;
}

const RATE_LIMIT = /rate.?limit|too many requests|\b429\b|quota/i;

export function classifyAcp(facts: AcpRunFacts, hints: AcpHints): Outcome {
  const { failure, abort } = facts;
  const base = { timed_out: false };
  if (failure?.kind === 'spawn') {
    const missing = failure.code === 'ENOENT';
    return {
      status: 'blocked',
      raw: `spawn:${failure.code}`,
      message: missing ? `agent program not found: ${facts.program}` : `cannot start ${facts.program}: ${failure.message}`,
      hint: missing ? hints.install : `check the permissions of ${facts.program}`,
      ...base,
    };
  }
  if (failure?.kind === 'auth_required') return { status: 'blocked', raw: 'auth_required', message: failure.message, hint: hints.auth, ...base };
  if (abort?.kind === 'timeout') return { status: 'failed', raw: 'timeout', message: abort.message, timed_out: true };
  if (abort?.kind === 'cancel') return { status: 'cancelled', raw: 'cancel', message: abort.message, ...base };
  if (facts.turnTimedOut) return { status: 'failed', raw: 'turn_timeout', message: 'the prompt turn passed its deadline (turn_timeout_ms)', timed_out: true };
  if (failure?.kind === 'remote' && RATE_LIMIT.test(failure.message)) {
    return { status: 'blocked', raw: 'rate_limited', message: failure.message, hint: 'the model provider is rate limiting or out of quota: retry later', ...base };
  }
  if (failure?.kind === 'exited') {
    const raw = failure.signal ? `signal:${failure.signal}` : `exit:${failure.exitCode}`;
    return { status: 'failed', raw, message: `the agent died mid-run: ${failure.message}`, exit_code: failure.exitCode, signal: failure.signal, ...base };
  }
  if (failure?.kind === 'request_timeout') {
    return { status: 'failed', raw: `request_timeout:${failure.method}`, message: failure.message, hint: 'the agent did not answer; see runtime.stderr.log', timed_out: true };
  }
  if (failure?.kind === 'remote') return { status: 'failed', raw: `rpc:${failure.code}`, message: `${failure.method} failed: ${failure.message}`, ...base };
  if (failure?.kind === 'protocol') return { status: 'failed', raw: 'protocol', message: failure.message, ...base };
  switch (facts.stopReason) {
    case 'end_turn':
      return { status: 'completed', raw: 'stop:end_turn', message: 'the agent ended its turn', ...base };
    case 'max_tokens':
      return { status: 'failed', raw: 'stop:max_tokens', message: 'the agent stopped at its token limit', ...base };
    case 'max_turn_requests':
      return { status: 'failed', raw: 'stop:max_turn_requests', message: 'the agent stopped at its limit of model requests for one turn', ...base };
    case 'refusal':
      return { status: 'failed', raw: 'stop:refusal', message: 'the agent refused the prompt (or did not know the session)', ...base };
    case 'cancelled':
      return { status: 'cancelled', raw: 'stop:cancelled', message: 'the agent cancelled the turn', ...base };
    case null:
      return { status: 'failed', raw: 'no_stop_reason', message: 'the run ended before the prompt was answered', ...base };
    default:
      return { status: 'failed', raw: `stop:${facts.stopReason}`, message: `unknown stop reason "${facts.stopReason}"`, ...base };
  }
}
