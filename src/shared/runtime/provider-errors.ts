/**
 * Recognise the provider failures that need an operator (→ `blocked`) in the free text a CLI
 * agent prints: its error message, its last stderr lines. Pure; one table, checked in order:
 * auth before quota (a 401 body may mention billing), quota before rate limit (OpenAI sends
 * `insufficient_quota` with HTTP 429), and the model last.
 */
export type ProviderErrorKind = 'auth' | 'quota' | 'rate_limit' | 'model';

export interface ProviderError {
  kind: ProviderErrorKind;
  /** For rate limits, when the text says when to retry. */
  retryAfterMs?: number;
}

const TABLE: readonly (readonly [ProviderErrorKind, RegExp])[] = [
  ['auth', /(?<!line )\b(401|403)\b|unauthori[sz]ed|forbidden|invalid[_ -]?api[_ -]?key|incorrect api key|authentication|no api key|api key (is )?(missing|required|not (set|found|valid))|not logged in|log ?in again|\/login\b|oauth token (has )?(expired|invalid)|credentials? (expired|invalid|missing)/i],
  ['quota', /insufficient[_ ]quota|exceeded your (current )?quota|quota exceeded|usage limit|billing|credit balance|out of credits|payment required|\b402\b/i],
  ['rate_limit', /\b429\b|rate[_ -]?limit|too many requests/i],
  ['model', /\bmodel\b.{0,60}\b(not found|does not exist|is not supported|unknown|not available)|unknown model|no models? available|\bmodel_not_found\b/i],
];

/** The first blocking provider failure `text` describes, or null. */
export function matchProviderError(text: string | null | undefined): ProviderError | null {
  if (!text) return null;
  for (const [kind, pattern] of TABLE) {
    if (!pattern.test(text)) continue;
    if (kind !== 'rate_limit') return { kind };
    const retryAfterMs = parseRetryAfterMs(text);
    return retryAfterMs === undefined ? { kind } : { kind, retryAfterMs };
  }
  return null;
}

/** `try again in 20s`, `retry after 1.5 seconds`, `retry-after: 30`, `try again in 250ms`, `in 2 hours`. */
export function parseRetryAfterMs(text: string): number | undefined {
  const m = /(?:try again in|retry[- ]after:?|retry in)\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|sec(?:ond)?s?|m|min(?:ute)?s?|h|hours?)?\b/i.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = (m[2] ?? 's').toLowerCase();
  if (unit.startsWith('ms') || unit.startsWith('milli')) return Math.round(n);
  if (unit === 'm' || unit.startsWith('min')) return Math.round(n * 60_000);
  if (unit.startsWith('h')) return Math.round(n * 3_600_000);
  return Math.round(n * 1000);
}

/** The operator's next step for each blocking kind, naming the runtime's own tool. */
export function providerErrorHint(kind: ProviderErrorKind, runtime: string): string {
  switch (kind) {
    case 'auth':
      return `the ${runtime} credentials were refused: log in again or fix the API key in its config or runtime_config.env`;
    case 'quota':
      return `the ${runtime} account is out of quota or credit: top it up or switch provider/model`;
    case 'rate_limit':
      return `the ${runtime} provider is rate limiting: retry later or lower the concurrency`;
    case 'model':
      return `the model is unknown to the ${runtime} provider: fix runtime_config.model (or provider)`;
  }
}
