/**
 * The price table (`UH_PRICES` JSON or `UH_PRICES_FILE`): USD per million tokens, keyed by
 * runtime id (or model name). Cost is known only when the runtime reported it or the usage and
 * a price are both known; otherwise it is `null` (unknown), never zero.
 */
import { z } from 'zod';
import type { Usage } from './contracts/runtime-result.js';

/** Built on first use, as the other contracts: only a run with a price table parses one. */
export const PriceTableSchema = z.lazy(() => {
  const per = z.number().nonnegative();
  const price = z.strictObject({
    input_per_mtok: per,
    output_per_mtok: per,
    /** Cached input tokens, when cheaper; else they cost as input. */
    cached_input_per_mtok: per.optional(),
  });
  return z.record(z.string().min(1), price);
});
export type PriceTable = z.infer<typeof PriceTableSchema>;

/** USD of one run, or null when unknown. `keys` are tried in order (runtime id, then model). */
export function costOf(usage: Usage, prices: PriceTable, keys: readonly string[]): number | null {
  if (usage.cost_usd !== undefined) return usage.cost_usd;
  const price = keys.map((k) => prices[k]).find((p) => p !== undefined);
  if (!price || usage.input_tokens === undefined || usage.output_tokens === undefined) return null;
  const cached = Math.min(usage.cached_input_tokens ?? 0, usage.input_tokens);
  const cachedPrice = price.cached_input_per_mtok ?? price.input_per_mtok;
  const usd =
    ((usage.input_tokens - cached) * price.input_per_mtok +
      cached * cachedPrice +
      usage.output_tokens * price.output_per_mtok) /
    1e6;
  return Math.round(usd * 1e6) / 1e6;
}
