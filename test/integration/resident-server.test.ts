/**
 * The resident uh's server in this process (src/producers/cli/resident/server.ts), spoken to as
 * bin/resident-client.js does: a served run gets the client's directory and umask and its output
 * goes to the client, and the process is as it was after; a connection that never says what it
 * is, or a client that was accepted and never says `go`, is dropped and holds nothing; a hello of
 * another protocol is refused by name.
 */
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { frame, lineSplitter } from '../../src/producers/cli/resident/protocol.js';
import { startResident, type ResidentOptions } from '../../src/producers/cli/resident/server.js';
import { waitFor } from '../support/process.js';
import { removeDir, tempDir } from '../support/temp.js';

const created: string[] = [];
afterAll(() => created.forEach(removeDir));

const BUILD = 'f'.repeat(32);

async function resident(run: ResidentOptions['run']) {
  const dir = join(tempDir('uh-rs-'), 'daemon');
  created.push(join(dir, '..'));
  return startResident({
    dir,
    build: BUILD,
    env: process.env,
    idleMs: 60_000,
    helloWaitMs: 300,
    run,
    log: () => undefined,
  });
}

/** Connects, sends `lines`, and collects the answers until the server closes (or `untilMs`). */
function talk(socket: string, lines: unknown[], untilMs = 5_000): Promise<{ frames: any[]; closedAfterMs: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const conn = createConnection(socket);
    const split = lineSplitter(1 << 20);
    const frames: any[] = [];
    conn.on('connect', () => lines.forEach((l) => conn.write(frame(l))));
    conn.on('data', (chunk: Buffer) => frames.push(...split(chunk).map((l) => JSON.parse(l))));
    const timer = setTimeout(() => conn.destroy(), untilMs);
    conn.on('close', () => {
      clearTimeout(timer);
      resolve({ frames, closedAfterMs: Date.now() - started });
    });
  });
}

const runHello = (cwd: string, umask: number) => ({
  kind: 'run',
  v: 1,
  argv: ['mission', 'run', 'm.yaml'],
  cwd,
  umask,
  env: process.env,
  build: BUILD,
  node: process.version,
});

describe('the resident uh server', () => {
  it("serves a run in the client's directory and umask, its output the client's, and puts the process back", async () => {
    const cwd = tempDir('uh-rs-cwd-');
    created.push(cwd);
    const seen: Array<{ argv: string[]; cwd: string; umask: number }> = [];
    const server = await resident(async (argv) => {
      seen.push({ argv, cwd: process.cwd(), umask: process.umask() });
      process.stdout.write('to the client\n');
      process.stderr.write('and its stderr\n');
      return 3;
    });
    const [homeBefore, umaskBefore] = [process.cwd(), process.umask()];
    const { frames } = await talk(server.socket, [runHello(cwd, 0o077), { kind: 'go' }]);
    expect(seen).toEqual([{ argv: ['mission', 'run', 'm.yaml'], cwd, umask: 0o077 }]);
    expect([process.cwd(), process.umask()]).toEqual([homeBefore, umaskBefore]);
    const text = (kind: string) =>
      frames
        .filter((f) => f.kind === kind)
        .map((f) => Buffer.from(f.data, 'base64').toString())
        .join('');
    expect(frames[0]).toMatchObject({ kind: 'accepted', pid: process.pid });
    expect(text('out')).toBe('to the client\n');
    expect(text('err')).toBe('and its stderr\n');
    expect(frames.at(-1)).toEqual({ kind: 'exit', code: 3 });
    expect(server.status()).toMatchObject({ served: 1, serving: null });
    await server.stop();
  }, 15_000);

  it('drops a connection that never says what it is, and an accepted client that never says go', async () => {
    let ran = 0;
    const server = await resident(async () => ++ran);
    const silent = await talk(server.socket, []);
    expect(silent.frames).toEqual([]);
    expect(silent.closedAfterMs).toBeLessThan(3_000);
    const hesitant = await talk(server.socket, [runHello('/', 0o022)]);
    expect(hesitant.frames.map((f) => f.kind)).toEqual(['accepted']);
    expect(hesitant.closedAfterMs).toBeLessThan(3_000);
    expect(ran).toBe(0);
    expect(await waitFor(() => server.status().serving === null, 3_000)).toBe(true);
    // Nothing is held: the next run is served, and stop does not wait for anyone.
    const next = await talk(server.socket, [runHello('/', 0o022), { kind: 'go' }]);
    expect(next.frames.at(-1)).toEqual({ kind: 'exit', code: 1 });
    await server.stop();
  }, 15_000);

  it('refuses a hello of another protocol by name', async () => {
    const server = await resident(async () => 0);
    const { frames } = await talk(server.socket, [{ kind: 'run', v: 2 }]);
    expect(frames).toEqual([{ kind: 'refused', reason: 'not a hello of this protocol (another version of uh?)' }]);
    await server.stop();
  }, 15_000);
});
