/**
 * The outcome of an ACP run, pure: one table of rules checked in fixed priority, the first that
 * matches decides. Could not start → auth → mission timeout → cancel → turn deadline → provider
 * refusal (credentials, quota, rate limit, model: `blocked`) → agent exited → request deadline →
 * error answer → protocol → the prompt's stopReason.
 *
 * A provider failure arrives as a JSON-RPC error answer in many shapes: `Internal error:
 * Incorrect API key provided.` (-32603), an error whose code is the HTTP status (401, 429), or the
 * real reason only in `error.data` (kept in the message by `toFailure`). The answer's code and
 * its text are both read.
 */
import { basename } from 'node:path';
import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import {
  matchProviderError,
  providerErrorHint,
  type ProviderErrorKind,
} from '../../../shared/runtime/provider-errors.js';
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

/** JSON-RPC codes some agents copy from the provider's HTTP status. */
const HTTP_CODES: Readonly<Record<number, ProviderErrorKind>> = {
  401: 'auth',
  403: 'auth',
  402: 'quota',
  429: 'rate_limit',
};
/** Shapes the shared table does not name: Google's `"status":"UNAUTHENTICATED"`, `Fix external API key`. */
const ACP_AUTH = /\bunauthenticated\b|permission_denied|fix external api key/i;

/** The provider failure an error answer describes, or null. */
export function providerFailureOf(failure: { code: number; message: string }): ProviderErrorKind | null {
  const byCode = HTTP_CODES[failure.code];
  if (byCode) return byCode;
  if (ACP_AUTH.test(failure.message)) return 'auth';
  return matchProviderError(failure.message)?.kind ?? null;
}

const base = { timed_out: false } as const;
type Rule = (facts: AcpRunFacts, hints: AcpHints) => Outcome | null;

const RULES: readonly Rule[] = [
  ({ failure, program }, hints) => {
    if (failure?.kind !== 'spawn') return null;
    const missing = failure.code === 'ENOENT';
    const message = missing ? `agent program not found: ${program}` : `cannot start ${program}: ${failure.message}`;
    return {
      status: 'blocked',
      raw: `spawn:${failure.code}`,
      message,
      hint: missing ? hints.install : `check the permissions of ${program}`,
      ...base,
    };
  },
  ({ failure }, hints) =>
    failure?.kind === 'auth_required'
      ? { status: 'blocked', raw: 'auth_required', message: failure.message, hint: hints.auth, ...base }
      : null,
  ({ abort }) =>
    abort?.kind === 'timeout' ? { status: 'failed', raw: 'timeout', message: abort.message, timed_out: true } : null,
  ({ abort }) =>
    abort?.kind === 'cancel' ? { status: 'cancelled', raw: 'cancel', message: abort.message, ...base } : null,
  ({ turnTimedOut }) =>
    turnTimedOut
      ? {
          status: 'failed',
          raw: 'turn_timeout',
          message: 'the prompt turn passed its deadline (turn_timeout_ms)',
          timed_out: true,
        }
      : null,
  ({ failure, program }) => {
    if (failure?.kind !== 'remote') return null;
    const kind = providerFailureOf(failure);
    if (!kind) return null;
    return {
      status: 'blocked',
      raw: PROVIDER_RAW[kind],
      message: `${failure.method} failed: ${failure.message}`,
      hint: providerErrorHint(kind, basename(program) || 'agent'),
      ...base,
    };
  },
  ({ failure }) => {
    if (failure?.kind !== 'exited') return null;
    const raw = failure.signal ? `signal:${failure.signal}` : `exit:${failure.exitCode}`;
    return {
      status: 'failed',
      raw,
      message: `the agent died mid-run: ${failure.message}`,
      exit_code: failure.exitCode,
      signal: failure.signal,
      ...base,
    };
  },
  ({ failure }) =>
    failure?.kind === 'request_timeout'
      ? {
          status: 'failed',
          raw: `request_timeout:${failure.method}`,
          message: failure.message,
          hint: 'the agent did not answer; see runtime.stderr.log',
          timed_out: true,
        }
      : null,
  ({ failure }) =>
    failure?.kind === 'remote'
      ? {
          status: 'failed',
          raw: `rpc:${failure.code}`,
          message: `${failure.method} failed: ${failure.message}`,
          ...base,
        }
      : null,
  ({ failure }) =>
    failure?.kind === 'protocol' ? { status: 'failed', raw: 'protocol', message: failure.message, ...base } : null,
];

const PROVIDER_RAW: Readonly<Record<ProviderErrorKind, string>> = {
  auth: 'auth_failed',
  usage_limit: 'usage_limit',
  quota: 'quota_exhausted',
  rate_limit: 'rate_limited',
  model: 'model_unavailable',
  unreachable: 'provider_unreachable',
};

/** The prompt's stopReason when nothing went wrong. */
const STOP_REASONS: Readonly<Record<string, Pick<Outcome, 'status' | 'message'>>> = {
  end_turn: { status: 'completed', message: 'the agent ended its turn' },
  max_tokens: { status: 'failed', message: 'the agent stopped at its token limit' },
  max_turn_requests: { status: 'failed', message: 'the agent stopped at its limit of model requests for one turn' },
  refusal: { status: 'failed', message: 'the agent refused the prompt (or did not know the session)' },
  cancelled: { status: 'cancelled', message: 'the agent cancelled the turn' },
};

export function classifyAcp(facts: AcpRunFacts, hints: AcpHints): Outcome {
  for (const rule of RULES) {
    const outcome = rule(facts, hints);
    if (outcome) return outcome;
  }
  const reason = facts.stopReason;
  if (reason === null)
    return {
      status: 'failed',
      raw: 'no_stop_reason',
      message: 'the run ended before the prompt was answered',
      ...base,
    };
  const known = Object.hasOwn(STOP_REASONS, reason) ? STOP_REASONS[reason] : undefined;
  if (known) return { ...known, raw: `stop:${reason}`, ...base } as Outcome;
  return { status: 'failed', raw: `stop:${reason}`, message: `unknown stop reason "${reason}"`, ...base };
}
