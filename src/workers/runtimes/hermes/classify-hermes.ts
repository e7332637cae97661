import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import { classifyProcessEnd, firstLine, type ProcessEndFacts } from '../../../shared/runtime/classify-process.js';
import { matchProviderError, providerErrorHint } from '../../../shared/runtime/provider-errors.js';
import type { HermesResult } from './hermes-protocol.js';

/** Everything the hermes outcome depends on, gathered by the adapter after the child exits. */
export interface HermesExitFacts extends ProcessEndFacts {
  binary: string;
  mode: 'stream-json' | 'text';
  stderrTail: string;
  /** The end of stdout in text mode (Hermes prints some errors there); '' in stream-json mode. */
  stdoutTail: string;
  /** The stream-json terminal record; null in text mode or when it never came. */
  result: Pick<HermesResult, 'exit_code' | 'error'> | null;
}

/**
 * The hermes outcome, in fixed priority: could not start → timeout → cancel → blocking provider
 * failure (auth, quota, rate limit, model) → signal → exit 127 → failed `result` → non-zero exit
 * → stream-json without a `result` → completed. No YAML result block is needed or read. Pure.
 */
export function classifyHermes(f: HermesExitFacts): Outcome {
  const base = { exit_code: f.exitCode, signal: f.signal };
  const early = classifyProcessEnd(f, {
    program: f.binary,
    notFound: 'hermes binary not found',
    installHint:
      'install Hermes Agent >= 0.14.0 (pip install hermes-agent) or set runtime_config.binary (uh adapter check hermes)',
  });
  if (early) return early;
  const resultFailed = f.result !== null && (f.result.exit_code !== 0 || (f.result.error ?? '') !== '');
  const exitFailed = f.signal !== null || (f.exitCode !== null && f.exitCode !== 0);
  if (resultFailed || exitFailed) {
    const text = [f.result?.error ?? '', f.stderrTail, f.stdoutTail].filter((t) => t !== '').join('\n');
    const provider = matchProviderError(text);
    if (provider) {
      return {
        status: 'blocked',
        raw: `provider:${provider.kind}`,
        message: `hermes: ${firstLine(f.result?.error ?? text)}`,
        hint: providerErrorHint(provider.kind, 'hermes'),
        timed_out: false,
        ...(provider.retryAfterMs !== undefined ? { retry_after_ms: provider.retryAfterMs } : {}),
        ...base,
      };
    }
  }
  if (f.signal !== null) {
    return {
      status: 'failed',
      raw: `signal:${f.signal}`,
      message: `hermes was killed by ${f.signal}`,
      timed_out: false,
      ...base,
    };
  }
  if (f.exitCode === 127) {
    return {
      status: 'blocked',
      raw: 'exit:127',
      message: 'hermes: a program it needs is missing (exit 127)',
      hint: `is python on PATH for ${f.binary}?`,
      timed_out: false,
      ...base,
    };
  }
  if (f.result !== null && resultFailed) {
    const why = f.result.error || (f.result.exit_code === 130 ? 'interrupted' : `exit code ${f.result.exit_code}`);
    return {
      status: 'failed',
      raw: `result:exit_code:${f.result.exit_code}`,
      message: `hermes: ${firstLine(why)}`,
      timed_out: false,
      ...base,
    };
  }
  if (f.exitCode !== 0) {
    const detail = f.stderrTail ? `: ${firstLine(f.stderrTail.split('\n').slice(-3).join('\n'))}` : '';
    return {
      status: 'failed',
      raw: `exit:${f.exitCode}`,
      message: `hermes exited ${f.exitCode}${detail}`,
      timed_out: false,
      ...base,
    };
  }
  if (f.mode === 'stream-json' && f.result === null) {
    return {
      status: 'failed',
      raw: 'stream-json:no_result',
      message: 'hermes exited 0 without its terminal result record',
      timed_out: false,
      ...base,
    };
  }
  return { status: 'completed', raw: 'exit:0', message: 'hermes finished', timed_out: false, ...base };
}
