import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import { classifyProcessEnd, firstLine, type ProcessEndFacts } from '../../../shared/runtime/classify-process.js';
import { matchProviderError, providerErrorHint } from '../../../shared/runtime/provider-errors.js';

/** Everything the pi/oh-my-pi outcome depends on, gathered by the adapter after the child exits. */
export interface PiExitFacts extends ProcessEndFacts {
  /** `pi` or `oh-my-pi`, for messages and hints. */
  runtime: string;
  binary: string;
  /** How the operator installs the binary (for the missing-binary hint). */
  install: string;
  stderrTail: string;
  /** `stopReason` / `errorMessage` of the last assistant message (pi exits 0 on provider errors). */
  lastStopReason: string | null;
  lastErrorMessage: string | null;
  /** Final assistant text (last `message_end`, else `agent_end.messages`); null when none. */
  finalText: string | null;
}

/**
 * The pi / oh-my-pi outcome, in fixed priority: could not start → timeout → cancel → blocking
 * provider failure (auth, quota, rate limit, model) → signal → provider error stop → non-zero
 * exit → no final assistant message → completed. Pure.
 */
export function classifyPi(f: PiExitFacts): Outcome {
  const base = { exit_code: f.exitCode, signal: f.signal };
  const early = classifyProcessEnd(f, {
    program: f.binary,
    notFound: `${f.runtime} binary not found`,
    installHint: `install it (${f.install}) or set runtime_config.binary (uh adapter check ${f.runtime})`,
  });
  if (early) return early;
  const stoppedOnError = f.lastStopReason === 'error' || f.lastStopReason === 'aborted';
  const crashed = f.signal !== null || (f.exitCode !== null && f.exitCode !== 0);
  const failureText = stoppedOnError ? (f.lastErrorMessage ?? '') : crashed ? f.stderrTail : '';
  const provider = matchProviderError(failureText);
  if (provider) {
    return {
      status: 'blocked',
      raw: `provider:${provider.kind}`,
      message: `${f.runtime}: ${firstLine(failureText)}`,
      hint: providerErrorHint(provider.kind, f.runtime),
      timed_out: false,
      ...(provider.retryAfterMs !== undefined ? { retry_after_ms: provider.retryAfterMs } : {}),
      ...base,
    };
  }
  if (f.signal !== null) {
    return {
      status: 'failed',
      raw: `signal:${f.signal}`,
      message: `${f.runtime} was killed by ${f.signal}`,
      timed_out: false,
      ...base,
    };
  }
  if (stoppedOnError) {
    return {
      status: 'failed',
      raw: `stopReason:${f.lastStopReason}`,
      message: `${f.runtime}: ${f.lastErrorMessage ? firstLine(f.lastErrorMessage) : `request ${f.lastStopReason}`}`,
      timed_out: false,
      ...base,
    };
  }
  if (f.exitCode === 127) {
    return {
      status: 'blocked',
      raw: 'exit:127',
      message: `${f.runtime}: a program it needs is missing (exit 127)`,
      hint: `is node on PATH for ${f.binary}?`,
      timed_out: false,
      ...base,
    };
  }
  if (f.exitCode !== 0) {
    const detail = f.stderrTail ? `: ${firstLine(f.stderrTail)}` : '';
    return {
      status: 'failed',
      raw: `exit:${f.exitCode}`,
      message: `${f.runtime} exited ${f.exitCode}${detail}`,
      timed_out: false,
      ...base,
    };
  }
  if (f.finalText === null || f.finalText.trim() === '') {
    return {
      status: 'failed',
      raw: 'no_final_message',
      message: `${f.runtime} exited 0 without a final assistant message`,
      timed_out: false,
      ...base,
    };
  }
  return { status: 'completed', raw: 'exit:0', message: `${f.runtime} finished`, timed_out: false, ...base };
}
