/**
 * The resident uh (`uh daemon start`, docs/resident.md): one process that keeps uh loaded and
 * compiled and serves `uh mission run` command lines handed to it by bin/resident-client.js, so a
 * run skips uh's start-up. It serves a run only when serving it is the same as running it in the
 * client: the same build of uh, the same node, and the same environment (every variable uh or
 * what it starts could read), in the client's directory; else it refuses and
 * the client runs the command itself. One run at a time: a second client while one runs is
 * refused, and runs in its own process. While a run is served, this process's stdout and stderr
 * are the client's, and the client's Ctrl-C is the run's.
 */
import { chmodSync, lstatSync, statSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { makeDir } from '../../../shared/fs/make-dir.js';
import { keepHostWalksWarm } from '../../../workers/inline/run-inline.js';
import { invalidInput, errorMessage } from '../../../shared/errors.js';
import { withInterrupts, type Interrupt, type InterruptListener, type InterruptSource } from '../interrupts.js';
import {
  differingNames,
  DuringRun,
  frame,
  Hello,
  lineSplitter,
  MAX_HELLO_BYTES,
  SOCKET_NAME,
  type RunHello,
} from './protocol.js';

export interface ResidentOptions {
  /** `<cache dir>/daemon`: made 0700; the socket is made in it. */
  dir: string;
  /** The digest of the bundle this process runs (`<bundle>.sha256`); null: not run from the bundle, serves nothing. */
  build: string | null;
  /** This process's environment (the parsed config's `childEnv`): a run's must be the same. */
  env: Readonly<Record<string, string | undefined>>;
  /** Stop after this long with no run served. */
  idleMs: number;
  /** Close a connection that has not said what it is (its hello, or a run's `go`) by then (default 10 s). */
  helloWaitMs?: number;
  /** Runs one command line in this process and returns its exit code. */
  run(argv: string[]): Promise<number>;
  /** The daemon's own lines (not a served run's): its stderr as it was at start. */
  log(line: string): void;
}

export interface ResidentStatus {
  pid: number;
  socket: string;
  started_at: string;
  served: number;
  refused: number;
  /** The command line being served, or null. */
  serving: string[] | null;
  last_refusal: string | null;
  /** How long the last served run took in this process, from `go` to its exit code. */
  last_run_ms: number | null;
  /** This process's resident set and V8 heap in use, in bytes. */
  rss_bytes: number;
  heap_used_bytes: number;
  idle_exit_at: string;
}

export interface Resident {
  socket: string;
  status(): ResidentStatus;
  /** Stops accepting; a run being served gets `interrupt` (none: it finishes) and is waited for. */
  stop(interrupt?: Interrupt): Promise<void>;
  /** Settles when the daemon has stopped (asked to, or idle). */
  stopped: Promise<void>;
}

export interface State {
  served: number;
  refused: number;
  lastRefusal: string | null;
  lastRunMs: number | null;
  current: { argv: string[]; interrupt: (signal: Interrupt) => void; done: Promise<void> } | null;
  stopping: boolean;
  idleAt: number;
  /** Restarts the idle clock (at start and after each served run). */
  rearm: () => void;
}

/** A resident uh's state before it serves anything. */
export function newState(): State {
  return {
    served: 0,
    refused: 0,
    lastRefusal: null,
    lastRunMs: null,
    current: null,
    stopping: false,
    idleAt: 0,
    rearm: () => undefined,
  };
}

/** Why `hello` is not served here, or null (a table, in order). */
export function refusalOf(hello: RunHello, options: ResidentOptions, state: State): string | null {
  const rules: Array<[boolean, () => string]> = [
    [state.stopping, () => 'the resident uh is stopping'],
    [state.current !== null, () => 'the resident uh is serving another run'],
    [options.build === null, () => 'the resident uh was not started from the bundle (bin/uh.js)'],
    [hello.build !== options.build, () => 'another build of uh (restart uh daemon after a build or install)'],
    [hello.node !== process.version, () => `another node (${hello.node}; the resident uh runs ${process.version})`],
    [!isDirectory(hello.cwd), () => `the directory ${hello.cwd} is not one here`],
  ];
  for (const [refused, reason] of rules) if (refused) return reason();
  const differ = differingNames(hello.env, options.env);
  if (differ.length === 0) return null;
  const shown = differ.slice(0, 8).join(', ') + (differ.length > 8 ? `, and ${differ.length - 8} more` : '');
  return `the environment differs (${shown}): start uh daemon from the environment that runs uh`;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Starts serving at `<dir>/uh.sock`; refuses (invalid input) when another resident uh serves there. */
export async function startResident(options: ResidentOptions): Promise<Resident> {
  const socket = await claimSocket(options.dir);
  const state = newState();
  const startedAt = new Date().toISOString();
  let finish!: () => void;
  const stopped = new Promise<void>((resolve) => (finish = resolve));
  const server: Server = createServer((conn) => handle(conn, options, state, resident));
  let idle: NodeJS.Timeout | undefined;
  const rearm = () => {
    clearTimeout(idle);
    state.idleAt = Date.now() + options.idleMs;
    // A run being served is not idleness: the clock starts again when it has answered.
    idle = setTimeout(() => void (state.current === null && resident.stop()), options.idleMs);
    idle.unref();
  };
  const resident: Resident = {
    socket,
    stopped,
    status: () => ({
      pid: process.pid,
      socket,
      started_at: startedAt,
      served: state.served,
      refused: state.refused,
      serving: state.current?.argv ?? null,
      last_refusal: state.lastRefusal,
      last_run_ms: state.lastRunMs,
      rss_bytes: process.memoryUsage.rss(),
      heap_used_bytes: process.memoryUsage().heapUsed,
      idle_exit_at: new Date(state.idleAt).toISOString(),
    }),
    async stop(interrupt) {
      if (!state.stopping) {
        state.stopping = true;
        clearTimeout(idle);
        keepHostWalksWarm(false);
        server.close();
        removeSocket(socket);
      }
      const current = state.current;
      if (current && interrupt) current.interrupt(interrupt);
      await current?.done;
      finish();
    },
  };
  state.rearm = rearm;
  await listen(server, socket);
  chmodSync(socket, 0o600);
  rearm();
  keepHostWalksWarm(true); // a run after a pause finds the root host's walk fresh
  return resident;
}

function listen(server: Server, socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The socket path in a directory only this user can enter; a stale socket (no one answers) is removed. */
async function claimSocket(dir: string): Promise<string> {
  makeDir(dir, 0o700);
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== process.getuid?.())
    throw invalidInput(`${dir} is not a directory of this user`, [], 'remove it; uh daemon start makes it');
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
  const socket = join(dir, SOCKET_NAME);
  if (Buffer.byteLength(socket) > 107)
    throw invalidInput(
      `the socket path ${socket} is longer than a unix socket allows (107 bytes)`,
      [],
      'set a shorter UH_CACHE_DIR',
    );
  if (await answers(socket))
    throw invalidInput(
      `a resident uh already serves ${socket}`,
      [],
      'uh daemon status shows it; uh daemon stop stops it',
    );
  removeSocket(socket);
  return socket;
}

function removeSocket(socket: string): void {
  try {
    unlinkSync(socket);
  } catch {
    // gone already
  }
}

/** True when something accepts a connection on `socket`. */
function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const conn = createConnection(socket);
    conn.once('connect', () => {
      conn.destroy();
      resolve(true);
    });
    conn.once('error', () => resolve(false));
  });
}

const HELLO_WAIT_MS = 10_000;

/** One connection: its hello decides what it is. */
function handle(conn: Socket, options: ResidentOptions, state: State, resident: Resident): void {
  conn.setTimeout(options.helloWaitMs ?? HELLO_WAIT_MS, () => conn.destroy());
  const split = lineSplitter(MAX_HELLO_BYTES);
  const onData = (chunk: Buffer) => {
    let lines: string[];
    try {
      lines = split(chunk);
    } catch (error) {
      return void conn.end(frame({ kind: 'refused', reason: errorMessage(error) }));
    }
    if (lines.length === 0) return;
    conn.off('data', onData);
    // The lines after the hello (a client may send its `go` early) go to the run.
    answer(conn, lines[0] as string, { split, rest: lines.slice(1) }, { options, state, resident });
  };
  conn.on('data', onData);
  conn.on('error', () => conn.destroy());
}

/** The connection's line reader, and the lines it has read past the hello. */
interface Reader {
  split: (chunk: Buffer) => string[];
  rest: string[];
}

interface Daemon {
  options: ResidentOptions;
  state: State;
  resident: Resident;
}

function answer(conn: Socket, line: string, reader: Reader, { options, state, resident }: Daemon): void {
  let hello: Hello;
  try {
    hello = Hello.parse(JSON.parse(line));
  } catch {
    return void conn.end(frame({ kind: 'refused', reason: 'not a hello of this protocol (another version of uh?)' }));
  }
  if (hello.kind === 'status') return void conn.end(frame({ kind: 'status', ...resident.status() }));
  if (hello.kind === 'stop') {
    conn.write(frame({ kind: 'stopping', pid: process.pid }));
    return void resident.stop().then(() => conn.end());
  }
  const reason = refusalOf(hello, options, state);
  if (reason !== null) {
    state.refused++;
    state.lastRefusal = reason;
    options.log(`uh daemon: refused a run (${reason}); it ran in its own process`);
    return void conn.end(frame({ kind: 'refused', reason }));
  }
  serve(conn, hello, reader, { options, state, resident });
}

/**
 * Serves one accepted run once the client says `go` (a client that gave up waiting for the answer
 * runs the command itself and never says it); the client's signals interrupt the run, and so does
 * the client going away.
 */
function serve(conn: Socket, hello: RunHello, reader: Reader, { options, state }: Daemon): void {
  const listeners = new Set<InterruptListener>();
  const interrupt = (signal: Interrupt) => {
    for (const listener of [...listeners]) {
      listeners.delete(listener);
      listener(signal);
    }
  };
  const source: InterruptSource = {
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  state.current = { argv: hello.argv, interrupt, done };
  let phase: 'accepted' | 'running' | 'ended' = 'accepted';
  const start = () => {
    phase = 'running';
    conn.setTimeout(0);
    const began = performance.now();
    void runServed(hello, options, source, (stream, data) => {
      if (!conn.destroyed) conn.write(frame({ kind: stream, data: data.toString('base64') }));
    }).then((code) => {
      phase = 'ended';
      state.served++;
      state.lastRunMs = Math.round((performance.now() - began) * 10) / 10;
      state.current = null;
      state.rearm();
      conn.end(frame({ kind: 'exit', code }));
      release();
      setImmediate(() => collectGarbage(state.served % MAJOR_EVERY === 0 ? 'major' : 'minor'));
    });
  };
  const onLines = clientFrames(start, interrupt);
  conn.on('data', (chunk: Buffer) => {
    try {
      onLines(reader.split(chunk));
    } catch {
      conn.destroy(); // a line past the bound: not our client
    }
  });
  conn.once('close', () => {
    if (phase === 'running') interrupt('SIGTERM');
    if (phase !== 'accepted') return;
    state.current = null;
    release();
  });
  conn.write(frame({ kind: 'accepted', pid: process.pid }));
  onLines(reader.rest);
}

let gc: ((options: { type: 'minor' | 'major' }) => void) | undefined;
/** Every this many runs the collection after a run is a full one (~15 ms), else a young one (~1 ms). */
const MAJOR_EVERY = 50;

/**
 * A collection right after a run has answered, while the next client is still starting (~20 ms
 * of node start-up here): the next run starts with an empty young generation instead of
 * collecting in its own time, and a full one now and then keeps the old generation to what runs
 * still hold (docs/benchmarks.md, "a resident uh").
 */
function collectGarbage(type: 'minor' | 'major'): void {
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as typeof gc;
  }
  gc?.({ type });
}

function clientFrames(start: () => void, interrupt: (signal: Interrupt) => void): (lines: string[]) => void {
  let started = false;
  return (lines) => {
    for (const line of lines) {
      const parsed = DuringRun.safeParse(safeJson(line));
      if (!parsed.success) continue;
      if (parsed.data.kind === 'go' && !started) {
        started = true;
        start();
      } else if (parsed.data.kind === 'signal' && started) interrupt(parsed.data.name);
    }
  };
}

function safeJson(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return null;
  }
}

type Send = (stream: 'out' | 'err', data: Buffer) => void;

/** The command line in the client's directory and umask, its output the client's; the process is as it was after. */
async function runServed(hello: RunHello, options: ResidentOptions, source: InterruptSource, send: Send) {
  const home = process.cwd();
  const umask = process.umask(hello.umask);
  const restore = redirectOutput(send);
  try {
    process.chdir(hello.cwd);
    return await withInterrupts(source, () => options.run(hello.argv));
  } catch (error) {
    send('err', Buffer.from(`uh: ${errorMessage(error)}\n`));
    return 1;
  } finally {
    restore();
    process.chdir(home);
    process.umask(umask);
    process.exitCode = undefined;
  }
}

/** Sends what this process writes to stdout and stderr, until the returned function restores them. */
function redirectOutput(send: Send): () => void {
  const saved = { out: process.stdout.write, err: process.stderr.write };
  const writer =
    (stream: 'out' | 'err') =>
    (chunk: string | Uint8Array, encoding?: BufferEncoding | ((e?: Error | null) => void), cb?: () => void) => {
      send(
        stream,
        typeof chunk === 'string'
          ? Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8')
          : Buffer.from(chunk),
      );
      const done = typeof encoding === 'function' ? encoding : cb;
      if (done) queueMicrotask(() => done());
      return true;
    };
  process.stdout.write = writer('out') as typeof process.stdout.write;
  process.stderr.write = writer('err') as typeof process.stderr.write;
  return () => {
    process.stdout.write = saved.out;
    process.stderr.write = saved.err;
  };
}
