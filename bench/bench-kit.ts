/** Small helpers shared by the benchmarks: interleaved timing, medians, percentiles, printing. */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/**
 * Run each contender once per round, in alternating order, so machine noise lands on all of
 * them alike; returns the wall times in ms per contender.
 */
export async function interleave(
  rounds: number,
  contenders: Record<string, () => Promise<void>>,
): Promise<Record<string, number[]>> {
  const names = Object.keys(contenders);
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) {
      const start = process.hrtime.bigint();
      await contenders[name]!();
      times[name]!.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  }
  return times;
}

export function fmtMs(ms: number): string {
  return `${ms.toFixed(1)} ms`;
}

export function printTable(title: string, rows: Array<Record<string, string | number>>): void {
  console.log(`\n## ${title}\n`);
  if (rows.length === 0) return;
  const headers = Object.keys(rows[0]!);
  console.log(`| ${headers.join(' | ')} |`);
  console.log(`| ${headers.map(() => '---').join(' | ')} |`);
  for (const row of rows) console.log(`| ${headers.map((h) => String(row[h])).join(' | ')} |`);
}
