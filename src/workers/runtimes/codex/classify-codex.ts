/**
 * The `codex` runtime's outcome, pure, in fixed priority:
 *   1. could not start (missing binary)            → blocked
 *   2. timeout (process or mission)                → failed, timed_out
 *   3. cancel                                      → cancelled
 *   4. turn completed and exit 0                   → completed
 *   4b. stopped by the adapter: endpoint unreachable longer than network_wait_ms → blocked
 *   5. an operator problem in the error text       → blocked (auth, usage limit, quota,
 *      (turn.failed, then last `error`, then stderr)   rate limit, unknown model, unreachable)
 *   6. turn.failed                                 → failed
 *   7. killed by a signal                          → failed
 *   8. non-zero exit                               → failed
 *   9. exit 0 with no turn.completed: completed when the -o file has a message, else failed
 */
import type { Outcome } from '../../../shared/contracts/runtime-result.js';
import { parseRetryAfterMs } from '../../../shared/runtime/provider-errors.js';
import { classifyProcessEnd, type ProcessEndFacts } from '../../../shared/runtime/classify-process.js';

export interface CodexRunFacts extends ProcessEndFacts {
  binary: string;
  turnCompleted: boolean;
  turnFailed: string | null;
  lastError: string | null;
  stderrTail: string;
  /** The transport's one-line exit description (`exited with code 1: …`). */
  exitMessage: string;
  /** The `--output-last-message` file exists and is not blank. */
  lastMessagePresent: boolean;
  /** The adapter stopped codex after it waited for an unreachable endpoint longer than allowed. */
  gaveUpUnreachable?: boolean;
}

interface BlockedRule {
  raw: string;
  pattern: RegExp;
  message: string;
  hint: string;
  /** Rate limits only: when to retry, from the text or a default. */
  retry?: boolean;
}

/** Operator problems, first match wins; order matters (a usage limit often says 429 too). */
export const CODEX_BLOCKED_RULES: readonly BlockedRule[] = [
  {
    raw: 'auth',
    pattern: /401 Unauthorized|403 Forbidden|invalid_api_key|Incorrect API key|not logged in|codex login|Missing environment variable|refresh token|token (?:has )?expired|authentication/i,
    message: 'codex is not authenticated',
    hint: 'run "codex login" (or set the provider API key) for the CODEX_HOME this worker uses',
  },
  {
    raw: 'usage_limit',
    pattern: /usage limit/i,
    message: 'codex usage limit reached',
    hint: 'wait for the usage limit to reset or switch the account/plan in CODEX_HOME',
    retry: true,
  },
  {
    raw: 'quota',
    pattern: /quota|insufficient_quota|billing/i,
    message: 'the model provider quota is exhausted',
    hint: 'check the plan and billing of the API key codex uses',
  },
  {
    raw: 'rate_limit',
    pattern: /429|rate.?limit|Too Many Requests/i,
    message: 'the model provider is rate limiting',
    hint: 'retry later or lower the concurrency of the codex pool',
    retry: true,
  },
  {
    raw: 'unknown_model',
    pattern: /model_not_found|model .{0,80}(?:does not exist|not found|not supported)|unknown model/i,
    message: 'the model is unknown to the provider',
    hint: 'fix runtime_config.model (or the model in config.toml)',
  },
  {
    raw: 'unreachable',
    pattern: /error sending request|Connection refused|waiting for network|failed to lookup address|dns error/i,
    message: 'the model endpoint is unreachable',
    hint: 'check the network and the base_url of the model provider in config.toml',
  },
];

const DEFAULT_RETRY_MS = 60_000;

export function classifyCodex(f: CodexRunFacts): Outcome {
  const base = { exit_code: f.exitCode, signal: f.signal };
  const early = classifyProcessEnd(f, {
    program: f.binary,
    notFound: 'codex binary not found',
    installHint: 'install codex (scripts/install-real-runtimes.sh or npm i -g @openai/codex) or set runtime_config.binary',
    ...(f.lastError ? { timeoutDetail: ` (last codex error: ${f.lastError})` } : {}),
  });
  if (early) return early;
  if (f.exitCode === 0 && f.turnCompleted && f.turnFailed === null) {
    return { status: 'completed', raw: 'turn.completed', message: 'codex completed the turn', timed_out: false, ...base };
  }
  if (f.gaveUpUnreachable) {
    return {
      status: 'blocked',
      raw: 'unreachable',
      message: `the model endpoint is unreachable: ${oneLine(f.lastError ?? 'codex kept waiting for the network')}`,
      hint: 'check the network and the base_url of the model provider in config.toml (runtime_config.network_wait_ms bounds the wait)',
      timed_out: false,
      ...base,
    };
  }
  const evidence = [f.turnFailed, f.lastError, f.stderrTail].filter((t): t is string => !!t);
  for (const rule of CODEX_BLOCKED_RULES) {
    const text = evidence.find((t) => rule.pattern.test(t));
    if (text === undefined) continue;
    const retryAfter = rule.retry ? (parseRetryAfterMs(text) ?? DEFAULT_RETRY_MS) : undefined;
    return {
      status: 'blocked',
      raw: rule.raw,
      message: `${rule.message}: ${oneLine(text)}`,
      hint: rule.hint,
      timed_out: false,
      ...(retryAfter !== undefined ? { retry_after_ms: retryAfter } : {}),
      ...base,
    };
  }
  if (f.turnFailed !== null) {
    return { status: 'failed', raw: 'turn.failed', message: `codex turn failed: ${oneLine(f.turnFailed)}`, timed_out: false, ...base };
  }
  if (f.signal !== null) {
    return { status: 'failed', raw: `signal:${f.signal}`, message: `codex ${f.exitMessage}`, timed_out: false, ...base };
  }
  if (f.exitCode !== 0) {
    return { status: 'failed', raw: `exit:${f.exitCode}`, message: `codex ${f.exitMessage}`, timed_out: false, ...base };
  }
  if (f.lastMessagePresent) {
    return { status: 'completed', raw: 'exit:0', message: 'codex exited 0 with a final message', timed_out: false, ...base };
  }
  return {
    status: 'failed',
    raw: 'exit:0:no_turn',
    message: 'codex exited 0 without completing a turn or writing a final message',
    timed_out: false,
    ...base,
  };
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
