/**
 * One `codex app-server` child and its JSON-RPC connection (the shared NDJSON transport, `codex`
 * dialect), with the handshake done: `initialize` → `initialized`. Notifications go through an
 * `EventChannel` for the owner to pull (`next()`); server→client requests go to `onRequest`. Requests are checked
 * with zod. `close()` ends the child's stdin (the app server exits on EOF), then TERM/KILL.
 */
import { join } from 'node:path';
import type { z } from 'zod';
import type { SpawnGroup } from '../../../shared/process/spawn-group.js';
import { EventChannel } from '../../../shared/runtime/event-channel.js';
import { startJsonRpcChild, type JsonRpcChild } from '../../../shared/transport/jsonrpc-child.js';
import type { JsonRpcRequestHandler } from '../../../shared/transport/jsonrpc-ndjson.js';
import { InitializeResultSchema, TurnsListResultSchema, type Turn } from './codex-app-server-protocol.js';
import { appServerEnv, buildAppServerArgv, type CodexAppServerSettings } from './codex-app-server-settings.js';

export type AppServerInput =
  { kind: 'notification'; method: string; params: unknown } | { kind: 'closed'; message: string };

export interface AppServerClient {
  readonly child: JsonRpcChild;
  readonly codexHome: string;
  readonly userAgent: string;
  call<T>(method: string, params: unknown, schema: z.ZodType<T>, timeoutMs?: number): Promise<T>;
  /** The next notification, or `closed` once the connection is dead and the queue drained. */
  next(): Promise<AppServerInput>;
  close(): Promise<void>;
}

export interface StartAppServerOptions {
  config: CodexAppServerSettings;
  spawn: SpawnGroup;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  logDir: string;
  /** Log file stem: `<logDir>/<name>.stderr.log`, `<name>.trace.jsonl`. */
  name: string;
  onRequest?: JsonRpcRequestHandler;
  trace?: (direction: 'in' | 'out', line: string) => void;
}

const CLIENT_INFO = { name: 'uh', title: 'Ultimate Harness', version: '0.1.0' };

/** Spawn and initialize. Throws the transport error (kind `spawn` when the binary is missing). */
export async function startAppServer(options: StartAppServerOptions): Promise<AppServerClient> {
  const inputs = new EventChannel<AppServerInput>();
  /** Once the connection is dead and the channel drained, every `next()` answers this. */
  let closed: AppServerInput = { kind: 'closed', message: 'the app server went away' };
  const child = startJsonRpcChild({
    dialect: 'codex',
    spawn: options.spawn,
    argv: buildAppServerArgv(options.config),
    cwd: options.cwd,
    env: appServerEnv(options.config, options.env),
    stderrFile: join(options.logDir, `${options.name}.stderr.log`),
    killGraceMs: options.config.kill_grace_ms,
    closeGraceMs: 2000,
    defaultTimeoutMs: options.config.request_timeout_ms,
    onNotification: (method, params) => inputs.push({ kind: 'notification', method, params }),
    ...(options.onRequest ? { onRequest: options.onRequest } : {}),
    ...(options.trace ? { trace: options.trace } : {}),
  });
  void child.connection.closed.then((reason) => {
    closed = { kind: 'closed', message: reason.message };
    inputs.push(closed);
    inputs.close();
  });
  const pending = inputs[Symbol.asyncIterator]();

  const call = async <T>(method: string, params: unknown, schema: z.ZodType<T>, timeoutMs?: number): Promise<T> => {
    const result = await child.connection.request(method, params, timeoutMs === undefined ? {} : { timeoutMs });
    const parsed = schema.safeParse(result);
    if (!parsed.success)
      throw new Error(`${method}: unexpected answer: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
  };

  try {
    const init = await call(
      'initialize',
      { clientInfo: CLIENT_INFO, capabilities: { experimentalApi: false, requestAttestation: false } },
      InitializeResultSchema,
    );
    child.connection.notify('initialized');
    return {
      child,
      codexHome: init.codexHome,
      userAgent: init.userAgent,
      call,
      async next() {
        const item = await pending.next();
        return item.done ? closed : item.value;
      },
      async close() {
        await child.close();
      },
    };
  } catch (error) {
    await child.close();
    throw error;
  }
}

/** Every turn of a thread, oldest first (pages of `thread/turns/list`, bounded). */
export async function listAllTurns(
  client: Pick<AppServerClient, 'call'>,
  threadId: string,
  maxPages = 50,
): Promise<Turn[]> {
  const turns: Turn[] = [];
  let cursor: string | null | undefined = null;
  for (let page = 0; page < maxPages; page++) {
    const result: z.infer<typeof TurnsListResultSchema> = await client.call(
      'thread/turns/list',
      { threadId, sortDirection: 'asc', limit: 100, ...(cursor ? { cursor } : {}) },
      TurnsListResultSchema,
    );
    turns.push(...result.data);
    cursor = result.nextCursor;
    if (!cursor) return turns;
  }
  throw new Error(`thread ${threadId} has more than ${maxPages} pages of turns`);
}
