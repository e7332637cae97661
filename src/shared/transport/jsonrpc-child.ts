/**
 * A JSON-RPC peer that is a child process speaking NDJSON on its stdin/stdout (ACP agents,
 * the Codex app-server). The child runs in its own process group (`spawnGroup`); its stderr goes
 * to a file, with a bounded tail kept for error messages.
 *
 * Lifecycle: started → (connection dies when the child exits: every pending request rejects
 * with a `JsonRpcTransportError` of kind `exited`, or `spawn` when the program could not start)
 * → closed. `close()` ends the child's stdin, waits `closeGraceMs` for it to leave, then signals
 * the group SIGTERM and, after `killGraceMs`, SIGKILL.
 */
import type { SpawnGroup, SpawnGroupResult } from '../process/spawn-group.js';
import { TailBuffer } from './bounded-lines.js';
import { JsonRpcConnection, type JsonRpcConnectionOptions } from './jsonrpc-ndjson.js';
import { JsonRpcTransportError } from './jsonrpc-errors.js';

export interface JsonRpcChildOptions extends Omit<JsonRpcConnectionOptions, 'failOnInputEnd'> {
  spawn: SpawnGroup;
  argv: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Where the child's stderr is appended; discarded when unset (the tail is still kept). */
  stderrFile?: string;
  /** After `stdin.end()`, how long the child gets to exit by itself before SIGTERM. */
  closeGraceMs?: number;
  /** After SIGTERM, how long before SIGKILL. */
  killGraceMs?: number;
}

export interface JsonRpcChild {
  readonly connection: JsonRpcConnection;
  readonly pid: number | undefined;
  /** Resolves when the child has exited (never rejects; see `spawnError`). */
  readonly exited: Promise<SpawnGroupResult>;
  /** The last few KiB of the child's stderr. */
  stderrTail(): string;
  /** Idempotent; resolves once the child has exited. */
  close(): Promise<SpawnGroupResult>;
}

const STDERR_TAIL_BYTES = 4096;

export function startJsonRpcChild(options: JsonRpcChildOptions): JsonRpcChild {
  const tail = new TailBuffer(STDERR_TAIL_BYTES);
  const program = options.argv[0] ?? '';
  const group = options.spawn({
    argv: options.argv,
    cwd: options.cwd,
    env: options.env,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: {
      file: options.stderrFile ?? '/dev/null',
      tap: (chunk) => tail.push(chunk),
    },
    killGraceMs: options.killGraceMs ?? 2000,
  });
  const { stdin, stdout } = group;
  if (!stdin || !stdout) throw new Error('startJsonRpcChild: spawnGroup did not give pipes');
  const connection = new JsonRpcConnection(stdout, stdin, { ...options, failOnInputEnd: false });

  const exited = group.result.then((result) => {
    connection.fail(exitError(program, result, tail.text()));
    return result;
  });

  let closing: Promise<SpawnGroupResult> | undefined;
  const close = () => {
    closing ??= (async () => {
      connection.close(`${program} was closed`);
      let timer: NodeJS.Timeout | undefined;
      const graced = await Promise.race([
        exited.then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), options.closeGraceMs ?? 2000))),
      ]);
      if (timer) clearTimeout(timer);
      if (!graced) group.terminate();
      return exited;
    })();
    return closing;
  };

  return { connection, pid: group.pid, exited, stderrTail: () => tail.text(), close };
}

function exitError(program: string, result: SpawnGroupResult, stderrTail: string): JsonRpcTransportError {
  if (result.spawnError) {
    return new JsonRpcTransportError('spawn', `cannot start ${program}: ${result.spawnError.message}`, {
      code: result.spawnError.code,
      stderrTail,
    });
  }
  const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
  const lastLine = stderrTail.trim().split('\n').at(-1)?.trim();
  return new JsonRpcTransportError('exited', `${program} ${how}${lastLine ? `: ${lastLine}` : ''}`, {
    exitCode: result.exitCode,
    signal: result.signal,
    stderrTail,
  });
}
