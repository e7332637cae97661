/**
 * Milliseconds on a monotonic clock, for durations. `process.hrtime` rather than the global
 * `performance`: the first use of `performance` loads node's perf_hooks modules (~0.7 ms of a
 * CLI run's start-up), and a duration needs nothing else from them.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
