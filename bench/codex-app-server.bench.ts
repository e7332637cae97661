/**
 * codex-app-server, what exactly-once costs, on the same machine in the same run, the REAL codex
 * (scripts/install-real-runtimes.sh) against the scripted Responses server (one-message turns):
 *   app-server   the codex-app-server adapter: spawn, initialize, thread/start, journal writes,
 *                turn/start, follow, thread/turns/list readback, close
 *   codex exec   baseline: the codex adapter (`codex exec --json`) for the same turn
 *   recover      recovery of a finished operation: a fresh app server, thread/turns/list, adopt
 * Target: app-server ≤ 1.5× codex exec (the identity and readback must stay cheap).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { AnyRuntimeAdapter, RuntimeContextV1 } from '../src/shared/runtime/v1/index.js';
import { spawnGroup } from '../src/shared/process/spawn-group.js';
import { silentLogger } from '../src/shared/logger.js';
import { fileJournal } from '../src/operation/file-journal.js';
import { codexAdapter } from '../src/workers/runtimes/codex/codex-adapter.js';
import { codexAppServerAdapter } from '../src/workers/runtimes/codex-app-server/codex-app-server-adapter.js';
import { fmtMs, interleave, median, percentile, printTable } from './bench-kit.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CODEX = join(ROOT, '.cache/runtimes/codex/node_modules/.bin/codex');
const SERVER = join(ROOT, 'test/fixtures/model-server/responses-server.mjs');
const ROUNDS = Number(process.env.UH_BENCH_ROUNDS ?? 7);
const KEY = 'sk-bench-appserver';

async function startServer(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [SERVER, '--port', '0', '--api-key', KEY], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
  const { url, port } = JSON.parse(line) as { url: string; port: number };
  await fetch(`http://127.0.0.1:${port}/__control/script`, {
    method: 'POST',
    body: JSON.stringify([{ kind: 'message', text: 'done' }]),
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

export async function runCodexAppServerBench(): Promise<void> {
  const server = await startServer();
  const root = mkdtempSync(join(tmpdir(), 'uh-bench-as-'));
  const codexHome = join(root, 'codex-home');
  mkdirSync(codexHome);
  writeFileSync(
    join(codexHome, 'config.toml'),
    `model = "uh-scripted"\nmodel_provider = "uhmock"\n[model_providers.uhmock]\nname = "bench"\nbase_url = "${server.url}"\nwire_api = "responses"\nenv_key = "UH_MOCK_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n`,
  );
  const env = { PATH: process.env.PATH, HOME: join(root, 'home'), LANG: 'C.UTF-8' };
  mkdirSync(env.HOME);
  let n = 0;
  const lastLogDir: { app?: string } = {};
  const once = async (adapter: AnyRuntimeAdapter, config: Record<string, unknown>) => {
    const dir = join(root, `run-${++n}`);
    const workDir = join(dir, 'work');
    const logDir = join(dir, 'logs');
    mkdirSync(workDir, { recursive: true });
    mkdirSync(logDir);
    execFileSync('git', ['init', '-q', workDir]);
    const parsed = adapter.configSchema.parse({ ...adapter.defaultConfig, ...config });
    const mission = { missionId: `m-bench-${n}`, operationId: `op-bench-${n}` };
    const plan = await adapter.prepare({ config: parsed, prompt: 'Say done.', workDir, mission });
    const ctx: RuntimeContextV1 = {
      workDir,
      logDir,
      signal: new AbortController().signal,
      spawn: spawnGroup,
      fetch: globalThis.fetch,
      now: Date.now,
      env,
      journal: fileJournal(join(logDir, 'runtime-journal.json')),
      mission: { ...mission, attempt: 1 },
    };
    let status = '';
    for await (const event of adapter.launch(plan, ctx).events)
      if (event.type === 'runtime.finished') status = event.data.outcome.status;
    if (status !== 'completed') throw new Error(`${adapter.id} bench run ended ${status}`);
    if (adapter === codexAppServerAdapter) lastLogDir.app = logDir;
  };
  const base = { binary: CODEX, codex_home: codexHome, env: { UH_MOCK_API_KEY: KEY } };
  try {
    const times = await interleave(ROUNDS, {
      'app-server': () => once(codexAppServerAdapter, { ...base, mission_thread: 'new' }),
      'codex exec': () => once(codexAdapter, base),
    });
    const config = codexAppServerAdapter.configSchema.parse(base);
    const recoverTimes: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const start = process.hrtime.bigint();
      const r = await codexAppServerAdapter.recover!(config, {
        journal: fileJournal(join(lastLogDir.app!, 'runtime-journal.json')),
        logDir: lastLogDir.app!,
        spawn: spawnGroup,
        env,
        now: Date.now,
        logger: silentLogger,
        mission: { missionId: 'm', operationId: 'op' },
      });
      recoverTimes.push(Number(process.hrtime.bigint() - start) / 1e6);
      if (r.state !== 'settled') throw new Error(`recover: ${r.state} ${r.reason}`);
    }
    const all = { ...times, recover: recoverTimes };
    printTable(
      `codex-app-server vs codex exec (real codex, one-message turn, ${ROUNDS} rounds, node ${process.version})`,
      Object.entries(all).map(([name, t]) => ({
        contender: name,
        median: fmtMs(median(t)),
        p90: fmtMs(percentile(t, 90)),
      })),
    );
    const ratio = median(times['app-server']!) / median(times['codex exec']!);
    console.log(
      `\nratio app-server / codex exec: ${ratio.toFixed(2)} (target ≤ 1.50: ${ratio <= 1.5 ? 'met' : 'NOT met'})`,
    );
  } finally {
    server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}
