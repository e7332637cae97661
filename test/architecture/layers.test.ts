/**
 * The layers hold (docs/architecture.md): src/shared imports nothing of ours above it,
 * src/operation imports neither producers nor workers, workers never import producers, runtime
 * adapters never import BullMQ or ioredis, and producers enter workers at named entry points only.
 * The rules are .dependency-cruiser.cjs; this runs dependency-cruiser over src/ and names each
 * violating import.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const CLI = 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs';

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

async function cruise(): Promise<Violation[]> {
  const args = [CLI, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'];
  // depcruise exits non-zero when it finds violations; its JSON report is on stdout either way.
  const { stdout } = await run(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 }).catch(
    (error: { stdout?: string; stderr?: string; message: string }) => {
      if (!error.stdout) throw new Error(`dependency-cruiser failed: ${error.stderr ?? error.message}`);
      return { stdout: error.stdout };
    },
  );
  const report = JSON.parse(stdout) as { summary: { violations: Violation[]; totalCruised: number } };
  expect(report.summary.totalCruised).toBeGreaterThan(100);
  return report.summary.violations;
}

describe('layers', () => {
  it('no import crosses a layer the wrong way', async () => {
    const found = (await cruise()).map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    expect(found).toEqual([]);
  });
});
