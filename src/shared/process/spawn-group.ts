/**
 * Child processes in their own process group. A timeout or an abort signals the whole group:
 * SIGTERM first, SIGKILL after a grace period; whatever is left of the group when the leader
 * exits is killed too, so no grandchild outlives its run. Output goes to disk (straight to the
 * file descriptor when nobody taps it), so memory stays flat whatever the child prints.
 */
import { spawn as nodeSpawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, openSync, closeSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { LIMITS } from '../contracts/input-limits.js';
import { byteRedactor } from '../redact.js';

export type OutputSpec =
  | 'ignore'
  /** Written straight to the file by the kernel; `tap` makes it a pipe so the caller sees chunks too. */
  /** A piped output (tapped or `maxBytes` set) keeps at most `maxBytes` (default LIMITS.logBytes) in the file. */
  /** `redact`: these values never reach the file, even split across chunks (the tap sees the raw bytes). */
  | { file: string; tap?: (chunk: Buffer) => void; maxBytes?: number; redact?: readonly string[] };

/**
 * Copy `stream` into `file` up to `maxBytes`, then one marker line; the rest is still read (the
 * child never blocks) and tapped, but not written. Backpressure from the file pauses the stream.
 */
function cappedCopy(
  stream: Readable,
  file: Writable,
  maxBytes: number,
  tap?: (chunk: Buffer) => void,
  secrets: readonly string[] = [],
): void {
  let written = 0;
  let marked = false;
  const scrub = byteRedactor(secrets);
  // Once, when the first byte past the cap arrives: in this chunk, or in the next one when the
  // cap fell exactly on a chunk's end.
  const mark = () => {
    marked = true;
    return file.write(`\n[uh: log capped at ${maxBytes} bytes; the rest was dropped]\n`);
  };
  stream.on('data', (raw: Buffer) => {
    tap?.(raw);
    if (written >= maxBytes) {
      if (!marked && raw.length > 0) mark();
      return;
    }
    const chunk = scrub.active ? scrub.push(raw) : raw;
    const room = maxBytes - written;
    written += Math.min(room, chunk.length);
    let ok = file.write(chunk.length <= room ? chunk : chunk.subarray(0, room));
    if (chunk.length > room) ok = mark();
    if (!ok) {
      stream.pause();
      file.once('drain', () => stream.resume());
    }
  });
  let ended = false;
  const finish = () => {
    if (ended) return;
    ended = true;
    const rest = scrub.active ? scrub.end() : Buffer.alloc(0);
    file.end(written < maxBytes ? rest.subarray(0, maxBytes - written) : undefined);
  };
  stream.once('end', finish);
  stream.once('error', finish);
  stream.once('close', finish); // destroyed by us when a detached holder keeps the pipe open
}

export interface SpawnGroupOptions {
  argv: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** `ignore` closes stdin (what `codex exec` needs); `pipe` hands the caller a writable. */
  stdin?: 'ignore' | 'pipe' | { text: string };
  stdout?: OutputSpec | 'pipe';
  stderr?: OutputSpec | 'pipe';
  /** Aborting signals the group (SIGTERM, then SIGKILL after `killGraceMs`). */
  signal?: AbortSignal;
  timeoutMs?: number;
  killGraceMs?: number;
}

export interface SpawnGroupResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** True when `signal` aborted the run. */
  aborted: boolean;
  durationMs: number;
  /** Set when the program could not be started at all (`ENOENT`, `EACCES`). */
  spawnError?: { code: string; message: string };
}

export interface SpawnedGroup {
  readonly pid: number | undefined;
  /** Only when `stdin: 'pipe'`. */
  readonly stdin: Writable | null;
  /** Only when `stdout: 'pipe'`. */
  readonly stdout: Readable | null;
  /** Only when `stderr: 'pipe'`. */
  readonly stderr: Readable | null;
  /** Resolves when the leader has exited and its output is flushed. Never rejects. */
  readonly result: Promise<SpawnGroupResult>;
  /** Signal the group now (SIGTERM, then SIGKILL after the grace period). */
  terminate(): void;
}

export type SpawnGroup = (options: SpawnGroupOptions) => SpawnedGroup;

export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** One run's state, shared by the steps below. */
interface GroupRun {
  readonly options: SpawnGroupOptions;
  readonly started: number;
  readonly child: ChildProcess;
  /** Resolve when a tapped output file is flushed. */
  readonly flushers: Promise<void>[];
  timedOut: boolean;
  aborted: boolean;
  exited: boolean;
  killTimer: NodeJS.Timeout | undefined;
  timeoutTimer: NodeJS.Timeout | undefined;
}

/**
 * Processes started by this process through `spawnGroup`, by program (git by subcommand): what
 * the benchmarks count per mission (`npm run bench -- queue`). Counting only, never read by uh.
 */
const spawned = new Map<string, number>();

/** A copy of the counts so far (`git worktree`, `true`, ...). */
export function spawnCounts(): Record<string, number> {
  return Object.fromEntries(spawned);
}

function countSpawn(program: string, args: readonly string[]): void {
  const name = program.split('/').pop() ?? program;
  // git by its subcommand: the first argument after the hardening options (`-c k=v`, `--git-dir=…`).
  let i = 0;
  while (i < args.length && (args[i] as string).startsWith('-')) i += args[i] === '-c' || args[i] === '-C' ? 2 : 1;
  const key = name === 'git' && args[i] ? `git ${args[i]}` : name;
  spawned.set(key, (spawned.get(key) ?? 0) + 1);
}

/** A file output goes through this process (not straight to the descriptor) when tapped, capped or scrubbed. */
function piped(spec: Exclude<OutputSpec, 'ignore'>): boolean {
  return spec.tap !== undefined || spec.maxBytes !== undefined || (spec.redact !== undefined && spec.redact.length > 0);
}

/** Start the leader in its own group; untapped output files go straight to its descriptors. */
function launch(options: SpawnGroupOptions): ChildProcess {
  const fds: number[] = [];
  const stdio = (spec: OutputSpec | 'pipe' | undefined): 'ignore' | 'pipe' | number => {
    if (spec === undefined || spec === 'ignore') return 'ignore';
    if (spec === 'pipe') return 'pipe';
    if (piped(spec)) return 'pipe';
    const fd = openSync(spec.file, 'a');
    fds.push(fd);
    return fd;
  };
  const [program, ...args] = options.argv;
  if (program === undefined) throw new Error('spawnGroup: empty argv');
  countSpawn(program, args);
  try {
    return nodeSpawn(program, args, {
      cwd: options.cwd,
      env: options.env as NodeJS.ProcessEnv,
      stdio: [stdinMode(options), stdio(options.stdout), stdio(options.stderr)],
      detached: true,
    });
  } finally {
    for (const fd of fds) closeSync(fd); // the child holds its own copy
  }
}

function stdinMode(options: SpawnGroupOptions): 'ignore' | 'pipe' {
  return options.stdin === undefined || options.stdin === 'ignore' ? 'ignore' : 'pipe';
}

/** A piped stream (tapped or capped) goes to its file up to its cap, and all of it to the tap; the run waits for the file to flush. */
function wireTap(run: GroupRun, stream: Readable | null, spec: OutputSpec | 'pipe' | undefined): void {
  if (!stream || spec === undefined || spec === 'ignore' || spec === 'pipe' || !piped(spec)) return;
  const file = createWriteStream(spec.file, { flags: 'a' });
  cappedCopy(stream, file, spec.maxBytes ?? LIMITS.logBytes, spec.tap, spec.redact);
  run.flushers.push(
    new Promise<void>((resolve) => {
      file.on('close', () => resolve());
      file.on('error', () => resolve());
    }),
  );
}

function feedStdin(run: GroupRun): void {
  const { stdin } = run.options;
  if (stdin === undefined || typeof stdin !== 'object' || !run.child.stdin) return;
  run.child.stdin.on('error', () => {}); // EPIPE when the child does not read its stdin
  run.child.stdin.end(stdin.text);
}

/** SIGTERM to the group now, SIGKILL after the grace period; nothing once the leader is gone. */
function terminator(run: GroupRun): () => void {
  const grace = run.options.killGraceMs ?? 2000;
  return () => {
    if (run.exited) return;
    killGroup(run.child.pid, 'SIGTERM');
    if (!run.killTimer) {
      run.killTimer = setTimeout(() => killGroup(run.child.pid, 'SIGKILL'), grace);
      run.killTimer.unref();
    }
  };
}

/** Arm the timeout and the abort signal; returns the abort listener (removed at the end). */
function armStops(run: GroupRun, terminate: () => void): () => void {
  const { timeoutMs, signal } = run.options;
  if (timeoutMs !== undefined) {
    run.timeoutTimer = setTimeout(() => {
      run.timedOut = true;
      terminate();
    }, timeoutMs);
  }
  const onAbort = () => {
    run.aborted = true;
    terminate();
  };
  if (signal?.aborted) queueMicrotask(onAbort);
  else signal?.addEventListener('abort', onAbort, { once: true });
  return onAbort;
}

/** How long past the kill grace a consumer that has not yet taken the output it was given is waited for. */
const UNREAD_OUTPUT_WAIT_MS = 60_000;

/** Resolves once the leader has exited (or never started) and every tapped file is flushed. */
function settle(run: GroupRun, onAbort: () => void): Promise<SpawnGroupResult> {
  const { child } = run;
  return new Promise<SpawnGroupResult>((resolve) => {
    let spawnError: SpawnGroupResult['spawnError'];
    let settled = false;
    const finish = (exitCode: number | null, signal: string | null) => {
      if (settled) return;
      settled = true;
      run.exited = true;
      clearTimeout(run.timeoutTimer);
      clearTimeout(run.killTimer);
      run.options.signal?.removeEventListener('abort', onAbort);
      // Whatever the leader left behind in its group goes with it.
      killGroup(child.pid, 'SIGKILL');
      const { timedOut, aborted } = run;
      void Promise.all(run.flushers).then(() =>
        resolve({
          exitCode,
          signal,
          timedOut,
          aborted,
          durationMs: Date.now() - run.started,
          ...(spawnError ? { spawnError } : {}),
        }),
      );
    };
    child.on('error', (error: NodeJS.ErrnoException) => {
      spawnError = { code: error.code ?? 'ESPAWN', message: error.message };
      if (child.pid === undefined) finish(null, null);
    });
    // A grandchild may still hold a piped stdout open: once the leader is gone, end the group.
    // One that left the group (`setsid`) keeps the pipe: after the kill grace we stop waiting
    // for its EOF and close our ends, so wall time stays bounded (isolated runs have no such
    // survivor: the PID namespace dies with its init). Output already read but not yet taken by
    // a busy consumer is no such holder: the close waits for it (at most UNREAD_OUTPUT_WAIT_MS).
    child.on('exit', (code, signal) => {
      killGroup(child.pid, 'SIGKILL');
      const grace = run.options.killGraceMs ?? 2000;
      const giveUpAt = Date.now() + grace + UNREAD_OUTPUT_WAIT_MS;
      let eof: NodeJS.Timeout;
      const closeHeldPipes = () => {
        const unread = [child.stdout, child.stderr].some((stream) => (stream?.readableLength ?? 0) > 0);
        if (unread && Date.now() < giveUpAt) {
          eof = setTimeout(closeHeldPipes, grace).unref();
          return;
        }
        for (const stream of [child.stdout, child.stderr, child.stdin]) stream?.destroy();
        finish(code, signal);
      };
      eof = setTimeout(closeHeldPipes, grace).unref();
      child.once('close', () => clearTimeout(eof));
    });
    child.on('close', (code, signal) => finish(code, signal));
  });
}

export const spawnGroup: SpawnGroup = (options) => {
  const started = Date.now();
  const child = launch(options);
  const run: GroupRun = {
    options,
    started,
    child,
    flushers: [],
    timedOut: false,
    aborted: false,
    exited: false,
    killTimer: undefined,
    timeoutTimer: undefined,
  };
  wireTap(run, child.stdout, options.stdout);
  wireTap(run, child.stderr, options.stderr);
  feedStdin(run);
  const terminate = terminator(run);
  const result = settle(run, armStops(run, terminate));
  return {
    pid: child.pid,
    stdin: options.stdin === 'pipe' ? child.stdin : null,
    stdout: options.stdout === 'pipe' ? child.stdout : null,
    stderr: options.stderr === 'pipe' ? child.stderr : null,
    result,
    terminate,
  };
};
