/**
 * JSON-RPC over NDJSON stdio: round trips per second through our transport (`startJsonRpcChild`:
 * zod-validated parsing, id correlation, diagnostics) against a bare baseline on the same peer
 * process and pipes (readline + JSON.parse + a Map of resolvers), measured in the same run.
 * Two loads: sequential calls (latency) and 64 in flight (throughput).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { spawnGroup } from '../src/shared/process/spawn-group.js';
import { startJsonRpcChild } from '../src/shared/transport/jsonrpc-child.js';
import { interleave, median, printTable } from './bench-kit.js';

const PEER = fileURLToPath(new URL('../../test/fixtures/bin/jsonrpc-peer.mjs', import.meta.url));
const CALLS = 2000;
const ROUNDS = 5;
const PARAMS = {
  sessionId: 'sess-1',
  update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x'.repeat(200) } },
};

function bareClient() {
  const child = spawn(process.execPath, [PEER], { stdio: ['pipe', 'pipe', 'ignore'] });
  const waiting = new Map<number, (v: unknown) => void>();
  let next = 1;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { id: number; result: unknown };
    waiting.get(message.id)?.(message.result);
    waiting.delete(message.id);
  });
  return {
    request: (method: string, params: unknown) =>
      new Promise((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        child.stdin!.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
      }),
    close: () => child.stdin!.end(),
  };
}

async function drive(request: (m: string, p: unknown) => Promise<unknown>, inFlight: number): Promise<void> {
  let sent = 0;
  const lane = async () => {
    while (sent < CALLS) {
      sent += 1;
      await request('echo', PARAMS);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
}

export async function runJsonRpcBench(): Promise<void> {
  const ours = startJsonRpcChild({
    spawn: spawnGroup,
    argv: [process.execPath, PEER],
    cwd: process.cwd(),
    env: process.env,
    dialect: 'jsonrpc2',
  });
  const bare = bareClient();
  await ours.connection.request('echo', {});
  await bare.request('echo', {});
  const rows = [];
  for (const inFlight of [1, 64]) {
    const times = await interleave(ROUNDS, {
      ours: () => drive((m, p) => ours.connection.request(m, p), inFlight),
      bare: () => drive(bare.request, inFlight),
    });
    const o = median(times.ours!);
    const b = median(times.bare!);
    rows.push({
      load: inFlight === 1 ? 'sequential' : `${inFlight} in flight`,
      'uh transport calls/s': Math.round((CALLS / o) * 1000),
      'bare baseline calls/s': Math.round((CALLS / b) * 1000),
      'time ratio uh/bare': (o / b).toFixed(2),
    });
  }
  printTable(`JSON-RPC NDJSON round trips (${CALLS} calls x ${ROUNDS} rounds, median)`, rows);
  bare.close();
  await ours.close();
}
