/**
 * Pure classification of a `codex-app-server` run. Priority, first match wins:
 *   1. the app server could not start            → blocked (`spawn:<code>`)
 *   2. the exact turn was read back terminal     → by its status: completed; interrupted → cancelled
 *      (our cancel) / failed timed_out (our timeout) / failed (anything else); failed → the
 *      `codexErrorInfo` table below
 *   3. nothing was dispatched                    → cancelled / failed timed_out / the setup error
 *   4. dispatched, but no terminal readback      → failed `dispatch:unknown` (the operation is UNKNOWN:
 *      never re-sent; `uh mission recover` settles it)
 */
import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import type { AbortReasonV1 } from '../../../shared/runtime/v1/runtime-context.js';
import {
  parseRetryAfterMs,
  providerErrorHint,
  type ProviderErrorKind,
} from '../../../shared/runtime/provider-errors.js';
import type { CodexErrorInfo, TerminalTurnStatus, TurnError } from './codex-app-server-protocol.js';

type Verdict = Pick<Outcome, 'status' | 'message'> & { hint?: string; retry_after_ms?: number };

const hint = (kind: ProviderErrorKind) => providerErrorHint(kind, 'codex-app-server');
const AUTH_HINT = hint('auth');
const RATE_HINT = hint('rate_limit');
const QUOTA_HINT = hint('quota');
const MODEL_HINT = hint('model');
const ENDPOINT_HINT = hint('unreachable');

/** `{"httpConnectionFailed":{"httpStatusCode":401}}` → ['httpConnectionFailed', 401]; `"unauthorized"` → ['unauthorized', null]. */
export function errorInfoKey(info: CodexErrorInfo): [string, number | null] {
  if (info === null) return ['none', null];
  if (typeof info === 'string') return [info, null];
  const [key, value] = Object.entries(info)[0] ?? ['other', null];
  const code = (value as { httpStatusCode?: unknown } | null)?.httpStatusCode;
  return [key, typeof code === 'number' ? code : null];
}

function byHttpStatus(code: number | null, message: string, unreachable: Verdict): Verdict {
  if (code === null) return unreachable;
  if (code === 401 || code === 403) return { status: 'blocked', message, hint: AUTH_HINT };
  if (code === 404) return { status: 'blocked', message, hint: MODEL_HINT };
  if (code === 429) return { status: 'blocked', message, hint: RATE_HINT };
  return { status: 'failed', message };
}

/** One row per `CodexErrorInfo` variant: a failed turn's error → blocked (needs an operator) or failed. */
export function classifyTurnError(error: TurnError | null): Verdict {
  const message = error?.message ?? 'the turn failed without an error';
  const [key, code] = errorInfoKey(error?.codexErrorInfo ?? null);
  switch (key) {
    case 'unauthorized':
      return { status: 'blocked', message, hint: AUTH_HINT };
    case 'usageLimitExceeded':
    case 'sessionBudgetExceeded':
      return { status: 'blocked', message, hint: QUOTA_HINT };
    case 'rateLimitExceeded': {
      const after = parseRetryAfterMs(message);
      return { status: 'blocked', message, hint: RATE_HINT, ...(after !== undefined ? { retry_after_ms: after } : {}) };
    }
    case 'modelNotFound':
      return { status: 'blocked', message, hint: MODEL_HINT };
    case 'serverOverloaded':
    case 'flexUnavailable':
    case 'policyCapacityUnavailable':
      return { status: 'blocked', message, hint: 'the provider has no capacity now: retry later as a new operation' };
    case 'httpConnectionFailed':
    case 'responseStreamConnectionFailed':
      return byHttpStatus(code, message, { status: 'blocked', message, hint: ENDPOINT_HINT });
    case 'responseTooManyFailedAttempts':
      return byHttpStatus(code, message, { status: 'failed', message });
    case 'contextWindowExceeded':
      return {
        status: 'failed',
        message,
        hint: 'the thread is out of context: use mission_thread: new, or a smaller task',
      };
    case 'cyberPolicy':
    case 'bioPolicy':
    case 'misalignmentPolicyViolation':
    case 'inferenceHookDenied':
      return { status: 'failed', message, hint: 'the model refused the request under a usage policy' };
    case 'tooManyDenials':
      return {
        status: 'failed',
        message,
        hint: 'too many approvals were declined: widen runtime_config.approvals or the sandbox',
      };
    case 'responseStreamDisconnected':
    case 'internalServerError':
    case 'badRequest':
    case 'sandboxError':
    case 'threadRollbackFailed':
    case 'activeTurnNotSteerable':
    case 'other':
    default:
      return { status: 'failed', message };
  }
}

export interface CodexAppServerClassifyInput {
  binary: string;
  spawnError?: { code: string; message: string };
  abort: AbortReasonV1 | null;
  /** The exact turn's status as read back (`thread/turns/list`), when it was terminal. */
  readback: { status: TerminalTurnStatus; error: TurnError | null } | null;
  /** What was proven about `turn/start`: never sent, sent without a bound turn, or bound. */
  dispatch: 'not_sent' | 'sent' | 'bound';
  /** Why the run ended without readback (setup failure, app server died, readback timeout). */
  failure?: { raw: string; message: string; blocked?: boolean; hint?: string };
}

/** The outcome of one run. Pure; the raw reason carries the readback status (`readback:completed`). */
export function classifyCodexAppServer(input: CodexAppServerClassifyInput): Outcome {
  const timedOut = input.abort?.kind === 'timeout';
  if (input.spawnError) {
    return {
      status: 'blocked',
      raw: `spawn:${input.spawnError.code}`,
      message: `cannot start ${input.binary}: ${input.spawnError.message}`,
      hint: 'install codex: npm i -g @openai/codex (on PATH), or set runtime_config.binary to its path',
      timed_out: false,
    };
  }
  if (input.readback) {
    const raw = `readback:${input.readback.status}`;
    if (input.readback.status === 'completed')
      return { status: 'completed', raw, message: 'the turn completed (read back)', timed_out: false };
    if (input.readback.status === 'interrupted') {
      if (input.abort?.kind === 'cancel')
        return { status: 'cancelled', raw, message: input.abort.message, timed_out: false };
      if (input.abort?.kind === 'timeout')
        return { status: 'failed', raw, message: input.abort.message, timed_out: true };
      return {
        status: 'failed',
        raw,
        message: input.failure?.message ?? 'the turn was interrupted (its app server went away)',
        timed_out: false,
      };
    }
    const verdict = classifyTurnError(input.readback.error);
    const info = errorInfoKey(input.readback.error?.codexErrorInfo ?? null)[0];
    return { ...verdict, raw: `${raw}:${info}`, timed_out: false };
  }
  if (input.dispatch === 'not_sent') {
    if (input.abort?.kind === 'cancel')
      return { status: 'cancelled', raw: 'not_dispatched', message: input.abort.message, timed_out: false };
    if (input.abort?.kind === 'timeout')
      return { status: 'failed', raw: 'not_dispatched', message: input.abort.message, timed_out: true };
    const f = input.failure ?? { raw: 'not_dispatched', message: 'the turn was never started' };
    return {
      status: f.blocked ? 'blocked' : 'failed',
      raw: f.raw,
      message: f.message,
      ...(f.hint ? { hint: f.hint } : {}),
      timed_out: false,
    };
  }
  return {
    status: 'failed',
    raw: 'dispatch:unknown',
    message: `the turn may have started but its end could not be read back${input.failure ? `: ${input.failure.message}` : ''}`,
    hint: 'the operation is UNKNOWN and will not be re-sent: run "uh mission recover <operation_id>"',
    timed_out: timedOut,
  };
}
