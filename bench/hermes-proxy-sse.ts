/**
 * hermes-proxy SSE throughput: a 50 MB chat-completion stream from the fake proxy (its own
 * process on 127.0.0.1) read through the whole adapter (SSE reader, zod per frame, events,
 * sentinel scan, runtime log on disk) against a bare undici + eventsource-parser loop that only
 * JSON-parses each frame and counts its text, interleaved in the same run. Also the peak RSS of
 * this process while each streams. Target: adapter ≥ 0.8× the bare loop.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { spawnGroup } from '../src/shared/process/spawn-group.js';
import type { RuntimeContextV1 } from '../src/shared/runtime/v1/index.js';
import { hermesProxyAdapter } from '../src/workers/runtimes/hermes-proxy/hermes-proxy-adapter.js';
import { fmtMs, interleave, median, printTable } from './bench-kit.js';

/** `UH_BENCH_SSE_MIB=500 npm run bench -- hermes-proxy-sse` shows the peak RSS does not grow with the stream. */
const BYTES = Number(process.env.UH_BENCH_SSE_MIB ?? 50) * 1024 * 1024;
const ROUNDS = 5;

function serverPath(): string {
  // Compiled to dist/bench/, or run from bench/ directly.
  for (const rel of [
    '../../test/fixtures/fake-hermes-proxy/server.mjs',
    '../test/fixtures/fake-hermes-proxy/server.mjs',
  ]) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error('fake hermes proxy not found (test/fixtures/fake-hermes-proxy/server.mjs)');
}

/** Samples RSS every 10 ms while `work` runs; returns its peak in MiB and the CPU ms it used. */
async function peakRss<T>(work: () => Promise<T>): Promise<{ value: T; peakMiB: number; cpuMs: number }> {
  let peak = process.memoryUsage.rss();
  const cpu = process.cpuUsage();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 10);
  try {
    const value = await work();
    peak = Math.max(peak, process.memoryUsage.rss());
    const used = process.cpuUsage(cpu);
    return { value, peakMiB: peak / 1024 / 1024, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    clearInterval(timer);
  }
}

async function bare(url: string): Promise<number> {
  const { request } = await import('undici');
  const { createParser } = await import('eventsource-parser');
  let chars = 0;
  const parser = createParser({
    onEvent(event) {
      if (event.data === '[DONE]') return;
      const json = JSON.parse(event.data) as { choices?: Array<{ delta?: { content?: string } }> };
      chars += json.choices?.[0]?.delta?.content?.length ?? 0;
    },
  });
  const res = await request(`${url}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer bench', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bulk', messages: [{ role: 'user', content: 'go' }], stream: true }),
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
  return chars;
}

async function throughAdapter(url: string, root: string): Promise<number> {
  const config = hermesProxyAdapter.configSchema.parse({ endpoint: url, model: 'bulk', auth_token: 'bench-token' });
  const plan = await hermesProxyAdapter.prepare({
    config,
    prompt: 'go',
    workDir: root,
    mission: { missionId: 'bench', operationId: 'bench' },
  });
  const logDir = mkdtempSync(join(root, 'logs-'));
  const ctx: RuntimeContextV1 = {
    workDir: root,
    logDir,
    signal: new AbortController().signal,
    spawn: spawnGroup,
    fetch: globalThis.fetch,
    now: Date.now,
    env: process.env,
    journal: { get: async () => ({}), put: async () => undefined }, // hermes-proxy keeps no journal
    mission: { missionId: 'bench', operationId: 'bench', attempt: 1 },
  };
  let chars = 0;
  let status = '';
  for await (const event of hermesProxyAdapter.launch(plan, ctx).events) {
    if (event.type === 'runtime.message') chars += event.data.text.length;
    if (event.type === 'runtime.finished') status = event.data.outcome.status;
  }
  // The log dir (with its runtime.stdout.log of the whole reply) is removed with `root` at the
  // end, outside the timed section: deleting it is not the adapter's work.
  if (status !== 'completed') throw new Error(`adapter run ended ${status}`);
  return chars;
}

export async function runHermesProxySseBench(): Promise<void> {
  const rssStart = process.memoryUsage.rss() / 1048576;
  const child = spawn(process.execPath, [serverPath(), '--scenario', 'bulk', '--bytes', String(BYTES)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const root = mkdtempSync(join(tmpdir(), 'uh-bench-hp-'));
  try {
    const [url] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
    // Warm both paths once (lazy imports, JIT), then interleave.
    const [a, b] = [await throughAdapter(url, root), await bare(url)];
    if (a !== b) throw new Error(`adapter saw ${a} chars, bare loop ${b}`);
    const rss: Record<string, number> = { adapter: 0, bare: 0 };
    const cpu: Record<string, number[]> = { adapter: [], bare: [] };
    const measure = async (name: 'adapter' | 'bare', work: () => Promise<number>) => {
      const m = await peakRss(work);
      rss[name] = Math.max(rss[name]!, m.peakMiB);
      cpu[name]!.push(m.cpuMs);
    };
    const times = await interleave(ROUNDS, {
      adapter: () => measure('adapter', () => throughAdapter(url, root)),
      bare: () => measure('bare', () => bare(url)),
    });
    const mb = BYTES / 1024 / 1024;
    const tAdapter = median(times.adapter!);
    const tBare = median(times.bare!);
    const ratio = tBare / tAdapter;
    printTable(`hermes-proxy SSE: ${mb} MiB stream, median of ${ROUNDS} interleaved rounds`, [
      {
        path: 'adapter (hermes-proxy launch)',
        'median wall': fmtMs(tAdapter),
        'MiB/s': (mb / (tAdapter / 1000)).toFixed(1),
        'median CPU': fmtMs(median(cpu.adapter!)),
        'peak RSS MiB': rss.adapter!.toFixed(0),
      },
      {
        path: 'bare undici + eventsource-parser',
        'median wall': fmtMs(tBare),
        'MiB/s': (mb / (tBare / 1000)).toFixed(1),
        'median CPU': fmtMs(median(cpu.bare!)),
        'peak RSS MiB': rss.bare!.toFixed(0),
      },
    ]);
    const cpuRatio = median(cpu.bare!) / median(cpu.adapter!);
    console.log(
      `\nadapter/bare throughput ratio (wall): ${ratio.toFixed(2)}× (target ≥ 0.80×) ${ratio >= 0.8 ? 'OK' : 'BELOW TARGET'}`,
    );
    console.log(
      `adapter/bare throughput ratio (CPU time of this process, less sensitive to a busy machine): ${cpuRatio.toFixed(2)}×`,
    );
    console.log(
      `peak RSS of this process while streaming ${mb} MiB: adapter ${rss.adapter!.toFixed(0)} MiB, bare ${rss.bare!.toFixed(0)} MiB ` +
        `(${rssStart.toFixed(0)} MiB before the suite's first request; the growth is garbage from parsed frames, the same for both)`,
    );
  } finally {
    child.kill('SIGTERM');
    rmSync(root, { recursive: true, force: true });
  }
}
