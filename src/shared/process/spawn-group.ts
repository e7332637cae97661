/**
 * Child processes in their own process group. A timeout or an abort signals the whole group:
 * SIGTERM first, SIGKILL after a grace period; whatever is left of the group when the leader
 * exits is killed too, so no grandchild outlives its run. Output goes to disk (straight to the
 * file descriptor when nobody taps it), so memory stays flat whatever the child prints.
 */
import { spawn as nodeSpawn } from 'node:child_process';
import { createWriteStream, openSync, closeSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { LIMITS } from '../contracts/input-limits.js';

export type OutputSpec =
  | 'ignore'
  /** Written straight to the file by the kernel; `tap` makes it a pipe so the caller sees chunks too. */
  /** A piped output (tapped or `maxBytes` set) keeps at most `maxBytes` (default LIMITS.logBytes) in the file. */
  | { file: string; tap?: (chunk: Buffer) => void; maxBytes?: number };

/**
 * Copy `stream` into `file` up to `maxBytes`, then one marker line; the rest is still read (the
 * child never blocks) and tapped, but not written. Backpressure from the file pauses the stream.
 */
function cappedCopy(stream: Readable, file: Writable, maxBytes: number, tap?: (chunk: Buffer) => void): void {
  let written = 0;
  stream.on('data', (chunk: Buffer) => {
    tap?.(chunk);
    if (written >= maxBytes) return;
    const room = maxBytes - written;
    written += Math.min(room, chunk.length);
    let ok = file.write(chunk.length <= room ? chunk : chunk.subarray(0, room));
    if (chunk.length > room) ok = file.write(`\n[uh: log capped at ${maxBytes} bytes; the rest was dropped]\n`);
    if (!ok) {
      stream.pause();
      file.once('drain', () => stream.resume());
    }
  });
  stream.once('end', () => file.end());
  stream.once('error', () => file.end());
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

export const spawnGroup: SpawnGroup = (options) => {
  const started = Date.now();
  const grace = options.killGraceMs ?? 2000;
  const fds: number[] = [];
  const flushers: Promise<void>[] = [];

  const stdio = (spec: OutputSpec | 'pipe' | undefined): 'ignore' | 'pipe' | number => {
    if (spec === undefined || spec === 'ignore') return 'ignore';
    if (spec === 'pipe') return 'pipe';
    if (spec.tap || spec.maxBytes !== undefined) return 'pipe';
    const fd = openSync(spec.file, 'a');
    fds.push(fd);
    return fd;
  };
  const stdinMode = options.stdin === undefined || options.stdin === 'ignore' ? 'ignore' : 'pipe';
  const [program, ...args] = options.argv;
  if (program === undefined) throw new Error('spawnGroup: empty argv');

  let child;
  try {
    child = nodeSpawn(program, args, {
      cwd: options.cwd,
      env: options.env as NodeJS.ProcessEnv,
      stdio: [stdinMode, stdio(options.stdout), stdio(options.stderr)],
      detached: true,
    });
  } finally {
    for (const fd of fds) closeSync(fd); // the child holds its own copy
  }

  const wire = (stream: Readable | null, spec: OutputSpec | 'pipe' | undefined) => {
    if (!stream || spec === undefined || spec === 'ignore' || spec === 'pipe' || (!spec.tap && spec.maxBytes === undefined)) return;
    const file = createWriteStream(spec.file, { flags: 'a' });
    cappedCopy(stream, file, spec.maxBytes ?? LIMITS.logBytes, spec.tap);
    flushers.push(
      new Promise<void>((resolve) => {
        file.on('close', () => resolve());
        file.on('error', () => resolve());
      }),
    );
  };
  wire(child.stdout, options.stdout);
  wire(child.stderr, options.stderr);

  if (options.stdin !== undefined && typeof options.stdin === 'object' && child.stdin) {
    child.stdin.on('error', () => {}); // EPIPE when the child does not read its stdin
    child.stdin.end(options.stdin.text);
  }

  let timedOut = false;
  let aborted = false;
  let killTimer: NodeJS.Timeout | undefined;
  let exited = false;
  const terminate = () => {
    if (exited) return;
    killGroup(child.pid, 'SIGTERM');
    if (!killTimer) {
      killTimer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), grace);
      killTimer.unref();
    }
  };
  const timeoutTimer =
    options.timeoutMs !== undefined
      ? setTimeout(() => {
          timedOut = true;
          terminate();
        }, options.timeoutMs)
      : undefined;
  const onAbort = () => {
    aborted = true;
    terminate();
  };
  if (options.signal) {
    if (options.signal.aborted) queueMicrotask(onAbort);
    else options.signal.addEventListener('abort', onAbort, { once: true });
  }

  const result = new Promise<SpawnGroupResult>((resolve) => {
    let spawnError: SpawnGroupResult['spawnError'];
    let settled = false;
    const finish = (exitCode: number | null, signal: string | null) => {
      if (settled) return;
      settled = true;
      exited = true;
      if (timeoutTimer) clearTimeout(timeoutTimer);
      if (killTimer) clearTimeout(killTimer);
      options.signal?.removeEventListener('abort', onAbort);
      // Whatever the leader left behind in its group goes with it.
      killGroup(child.pid, 'SIGKILL');
      void Promise.all(flushers).then(() =>
        resolve({
          exitCode,
          signal,
          timedOut,
          aborted,
          durationMs: Date.now() - started,
          ...(spawnError ? { spawnError } : {}),
        }),
      );
    };
    child.on('error', (error: NodeJS.ErrnoException) => {
      spawnError = { code: error.code ?? 'ESPAWN', message: error.message };
      if (child.pid === undefined) finish(null, null);
    });
    // A grandchild may still hold a piped stdout open: once the leader is gone, end the group.
    child.on('exit', () => killGroup(child.pid, 'SIGKILL'));
    child.on('close', (code, signal) => finish(code, signal));
  });

  return {
    pid: child.pid,
    stdin: stdinMode === 'pipe' && options.stdin === 'pipe' ? child.stdin : null,
    stdout: options.stdout === 'pipe' ? child.stdout : null,
    stderr: options.stderr === 'pipe' ? child.stderr : null,
    result,
    terminate,
  };
};
