/**
 * The CLI-JSONL transport: run a CLI that prints one JSON object per line on stdout (`codex exec
 * --json`, `pi --mode json`, `hermes --format stream-json`) and read it as a stream of items.
 *
 * - The child runs in its own process group (`ctx.spawn`); cancel/timeout kill the group, and so
 *   does leaving the iteration early (`finally`).
 * - stdout is written to `<logDir>/<logName>.stdout.jsonl` AND parsed; stderr goes to
 *   `<logDir>/<logName>.stderr.log`, its last few KiB kept for the exit message.
 * - stdin is closed unless a text is given (`codex exec` appends a piped stdin to its prompt).
 * - Each line is JSON-parsed and validated with the caller's zod schema; a line that is not
 *   JSON, fails the schema or is longer than the cap is yielded as a `malformed` item, never
 *   thrown. Reading applies backpressure, so memory is bounded by the line cap.
 * - The last item is always exactly one `exit`: code, signal, timedOut, aborted, spawn error and
 *   a one-line message such as `exited with code 2: <stderr tail>`.
 */
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import type { z } from 'zod';
import type { SpawnGroup, SpawnGroupResult } from '../process/spawn-group.js';
import { BoundedLineSplitter, TailBuffer, type BoundedLine } from './bounded-lines.js';

export interface CliJsonlOptions<T> {
  spawn: SpawnGroup;
  argv: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Validates each parsed line; a failure is a `malformed` item. */
  schema: z.ZodType<T>;
  /** Directory for the stdout/stderr log files (the operation's log dir). */
  logDir: string;
  /** File stem of the logs: `<logName>.stdout.jsonl`, `<logName>.stderr.log`. */
  logName: string;
  /** Closed (default) or a text written to stdin then closed. */
  stdin?: 'ignore' | { text: string };
  /** Aborting kills the group (SIGTERM, then SIGKILL after `killGraceMs`). */
  signal?: AbortSignal;
  timeoutMs?: number;
  killGraceMs?: number;
  /** Longest line parsed; longer lines are reported as malformed (default 4 MiB). */
  maxLineBytes?: number;
  /** How much of stderr's end is kept for the exit message (default 4 KiB). */
  stderrTailBytes?: number;
}

/** Why a line was not a message: not JSON, JSON the schema rejects, or over the length cap. */
export type MalformedReason = 'not_json' | 'schema' | 'too_long';

export interface CliJsonlExit extends SpawnGroupResult {
  /** The end of stderr, trimmed (at most `stderrTailBytes`). */
  stderrTail: string;
  /** One line for outcomes: `exited with code 2: <stderr tail>`, `killed by SIGTERM`, `timed out`… */
  message: string;
  stdoutLog: string;
  stderrLog: string;
  /** Lines read, valid ones and malformed ones. */
  lines: number;
  malformed: number;
}

export type CliJsonlItem<T> =
  | { kind: 'spawned'; pid: number | undefined }
  | { kind: 'message'; value: T }
  | { kind: 'malformed'; reason: MalformedReason; line: string; detail: string }
  | { kind: 'exit'; exit: CliJsonlExit };

const PREVIEW_CHARS = 1000;

/**
 * Run the CLI and iterate its output. The first item is `spawned` (with the pid), the last is
 * `exit`; between them `message` and `malformed` items in stdout order. Breaking out of the loop
 * kills the process group.
 */
export async function* runCliJsonl<T>(options: CliJsonlOptions<T>): AsyncGenerator<CliJsonlItem<T>> {
  const stdoutLog = join(options.logDir, `${options.logName}.stdout.jsonl`);
  const stderrLog = join(options.logDir, `${options.logName}.stderr.log`);
  const tail = new TailBuffer(options.stderrTailBytes ?? 4096);
  const child = options.spawn({
    argv: options.argv,
    cwd: options.cwd,
    env: options.env,
    stdin: options.stdin ?? 'ignore',
    stdout: 'pipe',
    stderr: { file: stderrLog, tap: (chunk) => tail.push(chunk) },
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.killGraceMs !== undefined ? { killGraceMs: options.killGraceMs } : {}),
  });
  let exited = false;
  const log = createWriteStream(stdoutLog, { flags: 'a' });
  let logOpen = true;
  // A failing log must not break the run: parsing goes on, the log is dropped.
  log.on('error', () => (logOpen = false));
  log.on('close', () => (logOpen = false));
  const logClosed = new Promise<void>((resolve) => log.once('close', () => resolve()));
  const splitter = new BoundedLineSplitter(options.maxLineBytes ?? 4 * 1024 * 1024);
  let lines = 0;
  let malformed = 0;
  const toItem = (line: BoundedLine): CliJsonlItem<T> | null => {
    const item = parseLine(line, options.schema);
    if (item === null) return null;
    lines += 1;
    if (item.kind === 'malformed') malformed += 1;
    return item;
  };
  try {
    yield { kind: 'spawned', pid: child.pid };
    if (child.stdout) {
      for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
        // Backpressure from the disk, unless the log has failed (then 'drain' never comes).
        if (logOpen && !log.write(chunk)) await Promise.race([once(log, 'drain'), logClosed]);
        for (const line of splitter.push(chunk)) {
          const item = toItem(line);
          if (item) yield item;
        }
      }
    }
    for (const line of splitter.end()) {
      const item = toItem(line);
      if (item) yield item;
    }
    const result = await child.result;
    exited = true;
    log.end();
    await logClosed;
    const stderrTail = tail.text();
    yield {
      kind: 'exit',
      exit: {
        ...result,
        stderrTail,
        message: describeExit(result, stderrTail),
        stdoutLog,
        stderrLog,
        lines,
        malformed,
      },
    };
  } finally {
    if (!exited) {
      child.terminate();
      child.stdout?.destroy();
      await child.result;
      log.end();
    }
  }
}

function parseLine<T>(line: BoundedLine, schema: z.ZodType<T>): CliJsonlItem<T> | null {
  if (line.kind === 'overflow') {
    return {
      kind: 'malformed',
      reason: 'too_long',
      line: line.preview.slice(0, PREVIEW_CHARS),
      detail: `line of ${line.bytes} bytes over the cap`,
    };
  }
  const text = line.text.trim();
  if (text === '') return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return {
      kind: 'malformed',
      reason: 'not_json',
      line: text.slice(0, PREVIEW_CHARS),
      detail: (error as Error).message,
    };
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const detail = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    return { kind: 'malformed', reason: 'schema', line: text.slice(0, PREVIEW_CHARS), detail };
  }
  return { kind: 'message', value: parsed.data };
}

/** `exited with code 2: <stderr tail>`, `killed by SIGKILL`, `timed out after …`, `could not start: …`. */
export function describeExit(result: SpawnGroupResult, stderrTail: string): string {
  const suffix = stderrTail === '' ? '' : `: ${lastLines(stderrTail, 5)}`;
  if (result.spawnError) return `could not start (${result.spawnError.code}): ${result.spawnError.message}`;
  if (result.timedOut) return `timed out and was killed${suffix}`;
  if (result.aborted) return `aborted and was killed${suffix}`;
  if (result.signal !== null) return `killed by ${result.signal}${suffix}`;
  return `exited with code ${result.exitCode}${suffix}`;
}

function lastLines(text: string, n: number): string {
  return text.split('\n').slice(-n).join('\n').slice(-1000);
}
