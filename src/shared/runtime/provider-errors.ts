/**
 * The one table of provider failures that need an operator (→ `blocked`), recognised in the free
 * text an agent prints (its error message, its last stderr lines), with the operator's next step
 * per runtime. Pure. Rows are checked in order: auth before quota (a 401 body may mention
 * billing), a usage limit before quota and rate limit (it often says 429 too), quota before rate
 * limit (OpenAI sends `insufficient_quota` with HTTP 429; Azure OpenAI's rate-limit message links
 * `aka.ms/oai/quotaincrease`, which is not a quota failure), then the model, then the network.
 *
 * Every runtime's classifier asks this table (`matchProviderError`) and says what it found in its
 * own `raw` (e.g. `provider:<kind>`, or codex's historical names); the hint comes from
 * `providerErrorHint(kind, runtime)`: the runtime's own wording when it has one, else the
 * generic row's. Retry-after parsing lives here too, once for free text and once for the HTTP header.
 */
export type ProviderErrorKind = 'auth' | 'usage_limit' | 'quota' | 'rate_limit' | 'model' | 'unreachable';

export interface ProviderError {
  kind: ProviderErrorKind;
  /** For the kinds that reset by themselves (usage limit, rate limit), when the text says when to retry. */
  retryAfterMs?: number;
}

export interface ProviderErrorRow {
  kind: ProviderErrorKind;
  pattern: RegExp;
  /** The failure passes by itself (a usage or rate limit): a retry after a delay may succeed. */
  retries: boolean;
  /** One line for the outcome message, naming the runtime. */
  summary: (runtime: string) => string;
  /** The generic operator hint, naming the runtime. */
  hint: (runtime: string) => string;
}

/** The table, in priority order; the first row whose pattern matches wins. */
export const PROVIDER_ERRORS: readonly ProviderErrorRow[] = [
  {
    kind: 'auth',
    pattern:
      /(?<!line )\b(401|403)\b|unauthori[sz]ed|forbidden|invalid[_ -]?api[_ -]?key|incorrect api key|authentication|no api key|api key (is )?(missing|required|not (set|found|valid))|not logged in|log ?in again|\/login\b|codex login|missing environment variable|refresh token|(oauth )?token (has )?(expired|invalid)|credentials? (expired|invalid|missing)/i,
    retries: false,
    summary: (runtime) => `${runtime} is not authenticated`,
    hint: (runtime) =>
      `the ${runtime} credentials were refused: log in again or fix the API key in its config or runtime_config.env`,
  },
  {
    kind: 'usage_limit',
    pattern: /usage limit/i,
    retries: true,
    summary: (runtime) => `${runtime} usage limit reached`,
    hint: (runtime) => `the ${runtime} account hit its usage limit: wait for the reset or switch the account/plan`,
  },
  {
    kind: 'quota',
    pattern:
      /insufficient[_ ]quota|exceeded your (current )?quota|quota(?!increase)|billing|credit balance|out of credits|payment required|\b402\b/i,
    retries: false,
    summary: () => 'the model provider quota is exhausted',
    hint: (runtime) => `the ${runtime} account is out of quota or credit: top it up or switch provider/model`,
  },
  {
    kind: 'rate_limit',
    pattern: /\b429\b|rate[_ -]?limit|rate.?limit|too many requests/i,
    retries: true,
    summary: () => 'the model provider is rate limiting',
    hint: (runtime) => `the ${runtime} provider is rate limiting: retry later or lower the concurrency`,
  },
  {
    kind: 'model',
    pattern:
      /\bmodel\b.{0,80}\b(not found|does not exist|is not supported|not supported|unknown|not available)|unknown model|no models? available|\bmodel_not_found\b/i,
    retries: false,
    summary: () => 'the model is unknown to the provider',
    hint: (runtime) => `the model is unknown to the ${runtime} provider: fix runtime_config.model (or provider)`,
  },
  {
    kind: 'unreachable',
    pattern: /error sending request|connection refused|waiting for network|failed to lookup address|dns error/i,
    retries: false,
    summary: () => 'the model endpoint is unreachable',
    hint: (runtime) => `is the ${runtime} model provider reachable from this host? check its base URL and the network`,
  },
];

/** Runtimes whose operator steps name their own tools; anything not listed takes the row's hint. */
export const PROVIDER_HINTS: Readonly<Record<string, Partial<Record<ProviderErrorKind, string>>>> = {
  codex: {
    auth: 'run "codex login" (or set the provider API key) for the CODEX_HOME this worker uses',
    usage_limit: 'wait for the usage limit to reset or switch the account/plan in CODEX_HOME',
    quota: 'check the plan and billing of the API key codex uses',
    rate_limit: 'retry later or lower the concurrency of the codex pool',
    model: 'fix runtime_config.model (or the model in config.toml)',
    unreachable: 'check the network and the base_url of the model provider in config.toml',
  },
  'codex-app-server': {
    auth: 'check the provider API key (runtime_config.env) or `codex login` for this CODEX_HOME',
    usage_limit: 'the account quota or usage limit is exhausted: top up or wait for the reset',
    quota: 'the account quota or usage limit is exhausted: top up or wait for the reset',
    rate_limit: 'rate limited: retry after the delay as a new operation',
    model: 'set runtime_config.model to a model the provider serves',
    unreachable: 'is the model provider reachable from this host? check base_url in config.toml',
  },
};

/** The first blocking provider failure `text` describes, or null; `kinds` narrows the rows asked. */
export function matchProviderError(
  text: string | null | undefined,
  kinds?: readonly ProviderErrorKind[],
): ProviderError | null {
  if (!text) return null;
  const row = PROVIDER_ERRORS.find((r) => (!kinds || kinds.includes(r.kind)) && r.pattern.test(text));
  if (!row) return null;
  const retryAfterMs = row.retries ? parseRetryAfterMs(text) : undefined;
  return retryAfterMs === undefined ? { kind: row.kind } : { kind: row.kind, retryAfterMs };
}

/** The operator's next step for `kind`, in the runtime's own words when it has them. */
export function providerErrorHint(kind: ProviderErrorKind, runtime: string): string {
  return PROVIDER_HINTS[runtime]?.[kind] ?? rowOf(kind).hint(runtime);
}

function rowOf(kind: ProviderErrorKind): ProviderErrorRow {
  return PROVIDER_ERRORS.find((r) => r.kind === kind)!;
}

/**
 * A delay stated in free text: `try again in 20s`, `try again after 3 minutes`, `retry after 1.5
 * seconds`, `retry-after: 30`, `retry in 250ms`, `in 2 hours`. Seconds when no unit is given.
 */
export function parseRetryAfterMs(text: string): number | undefined {
  const m =
    /(?:try again (?:in|after)|retry[- ]after:?|retry in)\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|sec(?:ond)?s?|m|min(?:ute)?s?|h|hours?)?\b/i.exec(
      text,
    );
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = (m[2] ?? 's').toLowerCase();
  if (unit.startsWith('ms') || unit.startsWith('milli')) return Math.round(n);
  if (unit === 'm' || unit.startsWith('min')) return Math.round(n * 60_000);
  if (unit.startsWith('h')) return Math.round(n * 3_600_000);
  return Math.round(n * 1000);
}

/**
 * The HTTP `Retry-After` header in ms from `nowMs`: delta-seconds or an HTTP date; null when
 * absent or unreadable. A date in the past gives 0.
 */
export function parseRetryAfterHeader(value: string | null | undefined, nowMs: number): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}
