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

interface Report {
  modules: Array<{ source: string; dependencies: Array<{ resolved: string }> }>;
  summary: { violations: Violation[]; totalCruised: number };
}

async function cruise(): Promise<Report> {
  const args = [CLI, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'];
  // depcruise exits non-zero when it finds violations; its JSON report is on stdout either way.
  const { stdout } = await run(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 }).catch(
    (error: { stdout?: string; stderr?: string; message: string }) => {
      if (!error.stdout) throw new Error(`dependency-cruiser failed: ${error.stderr ?? error.message}`);
      return { stdout: error.stdout };
    },
  );
  return JSON.parse(stdout) as Report;
}

describe('layers', () => {
  it('no import crosses a layer the wrong way', async () => {
    const report = await cruise();
    // The rules see what they guard: every layer is cruised, and a pool's BullMQ import resolves
    // to the path the runtime-adapter rule matches (a rule that matches nothing would pass silently).
    const sources = report.modules.map((m) => m.source);
    for (const layer of [
      'src/shared/',
      'src/operation/',
      'src/promotion/',
      'src/producers/',
      'src/workers/runtimes/',
    ]) {
      expect(sources.some((s) => s.startsWith(layer))).toBe(true);
    }
    const pool = report.modules.find((m) => m.source === 'src/workers/pools/runtime-pool.ts');
    expect(pool?.dependencies.some((d) => /(^|\/)node_modules\/bullmq\//.test(d.resolved))).toBe(true);
    const found = report.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    expect(found).toEqual([]);
  });
});
