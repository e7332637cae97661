/**
 * The pi adapter's cost of reading pi's JSON mode, against its floor. The same fake pi
 * (test/fixtures/bin/fake-pi.mjs, scenario `huge`: 64 MiB of `message_update` lines, one line
 * over the 4 MiB cap, then a real tool call and the final message) runs
 *   floor:      spawned in its own process group, stdout straight to a file, nothing parsed;
 *   pi adapter: through `piAdapter.launch` (CLI-JSONL transport: stdout to disk AND every line
 *               parsed, zod-validated and translated; sentinel scanned; outcome classified).
 * Contenders interleave; medians, throughput and the ratio are printed.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnGroup } from '../src/shared/process/spawn-group.js';
import { fileJournal } from '../src/operation/file-journal.js';
import { piAdapter } from '../src/workers/runtimes/pi/pi-adapter.js';
import type { RuntimeContextV1 } from '../src/shared/runtime/v1/index.js';
import { fmtMs, interleave, median, printTable } from './bench-kit.js';

const FAKE_PI = fileURLToPath(new URL('../../test/fixtures/bin/fake-pi.mjs', import.meta.url));
const ROUNDS = Number(process.env.UH_BENCH_ROUNDS ?? 5);
const MB = 64;

export async function runPiJsonl(): Promise<void> {
  const root = join(tmpdir(), `uh-bench-pi-${process.pid}`);
  mkdirSync(root, { recursive: true });
  const env = { ...process.env, UH_FAKE_SCENARIO: 'huge', FAKE_PI_HUGE_MB: String(MB) };
  let n = 0;
  const fresh = () => {
    const dir = join(root, `run-${++n}`);
    mkdirSync(join(dir, 'work'), { recursive: true });
    mkdirSync(join(dir, 'logs'), { recursive: true });
    return dir;
  };
  try {
    const times = await interleave(ROUNDS, {
      floor: async () => {
        const dir = fresh();
        const child = spawnGroup({
          argv: [FAKE_PI, '--print', '--mode', 'json', '--no-session'],
          cwd: join(dir, 'work'),
          env,
          stdout: { file: join(dir, 'logs', 'out.jsonl') },
          stdin: { text: 'bench' },
        });
        const result = await child.result;
        if (result.exitCode !== 0) throw new Error(`floor: fake pi exited ${result.exitCode}`);
      },
      'pi adapter': async () => {
        const dir = fresh();
        const config = piAdapter.configSchema.parse({
          binary: FAKE_PI,
          env: { UH_FAKE_SCENARIO: 'huge', FAKE_PI_HUGE_MB: String(MB) },
        });
        const plan = await piAdapter.prepare({
          config,
          prompt: 'bench',
          workDir: join(dir, 'work'),
          mission: { missionId: 'bench', operationId: `op-${n}` },
        });
        const ctx: RuntimeContextV1 = {
          workDir: join(dir, 'work'),
          logDir: join(dir, 'logs'),
          signal: new AbortController().signal,
          spawn: spawnGroup,
          fetch: globalThis.fetch,
          now: Date.now,
          env: process.env,
          journal: fileJournal(join(dir, 'logs', 'runtime-journal.json')),
          mission: { missionId: 'bench', operationId: `op-${n}`, attempt: 1 },
        };
        let status = '';
        for await (const event of piAdapter.launch(plan, ctx).events)
          if (event.type === 'runtime.finished') status = event.data.outcome.status;
        if (status !== 'completed') throw new Error(`pi adapter: run ended ${status}`);
      },
    });
    const floor = median(times.floor!);
    const adapter = median(times['pi adapter']!);
    printTable(`pi JSON mode: ${MB} MiB of JSONL, ${ROUNDS} interleaved rounds (median)`, [
      {
        contender: 'floor (stdout to a file, nothing parsed)',
        wall: fmtMs(floor),
        throughput: `${((MB / floor) * 1000).toFixed(0)} MiB/s`,
      },
      {
        contender: 'pi adapter (parse, validate, translate, classify)',
        wall: fmtMs(adapter),
        throughput: `${((MB / adapter) * 1000).toFixed(0)} MiB/s`,
      },
    ]);
    console.log(`\nratio pi adapter / floor: ${(adapter / floor).toFixed(2)}x`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
