/**
 * Orders strings by UTF-16 code unit, as `<` does: git's byte order for ASCII paths, the same on
 * every host and locale, and free. `localeCompare` is none of these: its first call loads ICU's
 * collator (~8 ms of a CLI run, docs/benchmarks.md) and its order depends on the locale.
 */
export function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
