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
import {
  PROVIDER_ERRORS,
  parseRetryAfterMs,
  providerErrorHint,
  type ProviderErrorKind,
} from '../../../shared/runtime/provider-errors.js';
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

/** codex's `raw` for each provider-error kind (the shared table's names, but `unknown_model`). */
const CODEX_RAW: Record<ProviderErrorKind, string> = {
  auth: 'auth',
  usage_limit: 'usage_limit',
  quota: 'quota',
  rate_limit: 'rate_limit',
  model: 'unknown_model',
  unreachable: 'unreachable',
};

const DEFAULT_RETRY_MS = 60_000;

/** An outcome before the process facts every outcome carries. */
type Ending = Omit<Outcome, 'exit_code' | 'signal' | 'timed_out'>;
type Row = {
  when: (f: CodexRunFacts) => boolean;
  outcome: (f: CodexRunFacts) => Ending;
};

/** After the process end and the provider-error table: the rest, first match wins. */
const ENDINGS: readonly Row[] = [
  {
    when: (f) => f.turnFailed !== null,
    outcome: (f) => ({
      status: 'failed',
      raw: 'turn.failed',
      message: `codex turn failed: ${oneLine(f.turnFailed ?? '')}`,
    }),
  },
  {
    when: (f) => f.signal !== null,
    outcome: (f) => ({ status: 'failed', raw: `signal:${f.signal}`, message: `codex ${f.exitMessage}` }),
  },
  {
    when: (f) => f.exitCode !== 0,
    outcome: (f) => ({ status: 'failed', raw: `exit:${f.exitCode}`, message: `codex ${f.exitMessage}` }),
  },
  {
    when: (f) => f.lastMessagePresent,
    outcome: () => ({ status: 'completed', raw: 'exit:0', message: 'codex exited 0 with a final message' }),
  },
  {
    when: () => true,
    outcome: () => ({
      status: 'failed',
      raw: 'exit:0:no_turn',
      message: 'codex exited 0 without completing a turn or writing a final message',
    }),
  },
];

/** The first row of the shared provider-error table that any piece of evidence matches. */
function providerError(f: CodexRunFacts): Ending | null {
  const evidence = [f.turnFailed, f.lastError, f.stderrTail].filter((t): t is string => !!t);
  for (const row of PROVIDER_ERRORS) {
    const text = evidence.find((t) => row.pattern.test(t));
    if (text === undefined) continue;
    const retryAfter = row.retries ? (parseRetryAfterMs(text) ?? DEFAULT_RETRY_MS) : undefined;
    return {
      status: 'blocked',
      raw: CODEX_RAW[row.kind],
      message: `${row.summary('codex')}: ${oneLine(text)}`,
      hint: providerErrorHint(row.kind, 'codex'),
      ...(retryAfter !== undefined ? { retry_after_ms: retryAfter } : {}),
    };
  }
  return null;
}

function earlyEnding(f: CodexRunFacts): Ending | null {
  if (f.exitCode === 0 && f.turnCompleted && f.turnFailed === null)
    return { status: 'completed', raw: 'turn.completed', message: 'codex completed the turn' };
  if (!f.gaveUpUnreachable) return null;
  return {
    status: 'blocked',
    raw: 'unreachable',
    message: `the model endpoint is unreachable: ${oneLine(f.lastError ?? 'codex kept waiting for the network')}`,
    hint: 'check the network and the base_url of the model provider in config.toml (runtime_config.network_wait_ms bounds the wait)',
  };
}

export function classifyCodex(f: CodexRunFacts): Outcome {
  const early = classifyProcessEnd(f, {
    program: f.binary,
    notFound: 'codex binary not found',
    installHint: 'install codex (npm i -g @openai/codex) so it is on PATH, or set runtime_config.binary to its path',
    ...(f.lastError ? { timeoutDetail: ` (last codex error: ${f.lastError})` } : {}),
  });
  if (early) return early;
  const found = earlyEnding(f) ?? providerError(f) ?? ENDINGS.find((row) => row.when(f))?.outcome(f);
  return {
    ...(found as Ending),
    timed_out: false,
    exit_code: f.exitCode,
    signal: f.signal,
  };
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
