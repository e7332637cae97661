/**
 * A worker's lifecycle lines (`uh worker start` without --json): pino NDJSON on stderr, each with
 * its `event` and the event's fields (`{"event":"metrics","url":…}`), beside other log lines.
 */
export function lifecycleEvent(output: string, event: string): Record<string, unknown> | undefined {
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed.event === event) return parsed;
    } catch {
      // a line cut short by the process's end
    }
  }
  return undefined;
}

/** The URL a worker started with `--metrics-port` announced in its `metrics` line. */
export function metricsUrlOf(output: string): string {
  const url = lifecycleEvent(output, 'metrics')?.url;
  if (typeof url !== 'string') throw new Error(`no metrics line with a url in the worker's output:\n${output}`);
  return url;
}
