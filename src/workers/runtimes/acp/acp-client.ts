/**
 * One ACP agent child and its connection, shared by the runs in one work dir (see `acp-pool.ts`).
 *
 * States: new → starting (spawned, `initialize` sent) → ready → poisoned | closed. Any transport
 * failure, or an error a run declares fatal, poisons the client: it is closed and the pool starts
 * a fresh child for the next run, which must `session/load` (or `session/new`) again; a cached
 * session id is never reused on a poisoned client.
 *
 * Notifications and agent requests are routed by `sessionId` to the run that owns the session:
 * `session/update` to its update listener, `session/request_permission` to its permission handler
 * (no handler: answered `cancelled`, a deny). `fs/*`, `terminal/*` and vendor requests are answered
 * -32601: we advertise no client capabilities.
 */
import type { SpawnGroup } from '../../../shared/process/spawn-group.js';
import { startJsonRpcChild, type JsonRpcChild } from '../../../shared/transport/jsonrpc-child.js';
import { JsonRpcRemoteError } from '../../../shared/transport/jsonrpc-errors.js';
import type { JsonRpcDiagnostic } from '../../../shared/transport/jsonrpc-ndjson.js';
import {
  ACP_PROTOCOL_VERSION,
  CANCELLED_ANSWER_WIRE,
  InitializeResponseSchema,
  LoadSessionResponseSchema,
  NewSessionResponseSchema,
  PromptResponseSchema,
  RequestPermissionRequestSchema,
  RequestPermissionResponseSchema,
  SessionUpdateNotificationSchema,
  type InitializeResponse,
  type PromptResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
} from './acp-protocol.js';
import { parseOrProtocolError } from './acp-protocol-error.js';
import { AcpEarlyUpdates } from './acp-early-updates.js';

export interface AcpClientOptions {
  spawn: SpawnGroup;
  argv: readonly string[];
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  stderrFile?: string;
  trace?: (direction: 'in' | 'out', line: string) => void;
  killGraceMs: number;
}

export interface AcpSessionHandlers {
  onUpdate(update: unknown): void;
  onPermission(request: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse>;
}

/** Something the agent sent that is not for one session: diagnostics and unanswered requests. */
export type AcpClientNotice =
  | { kind: 'diagnostic'; diagnostic: JsonRpcDiagnostic }
  | { kind: 'unsupported_request'; method: string }
  | { kind: 'unrouted'; method: string; sessionId: string | null };

export class AcpClient {
  private readonly child: JsonRpcChild;
  private readonly sessions = new Map<string, AcpSessionHandlers>();
  private readonly noticeListeners = new Set<(notice: AcpClientNotice) => void>();
  private readonly promptChains = new Map<string, Promise<unknown>>();
  private readonly early = new AcpEarlyUpdates();
  private poisonedReason: string | null = null;
  /** Set once `initialize` answered. */
  initialized: InitializeResponse | null = null;
  /** Per-child facts runs remember (the last `/reasoning` level sent per session). Gone with the child. */
  readonly memo = new Map<string, string>();
  /** Sessions this child created or loaded (ids are only valid on the child that knows them). */
  readonly knownSessions = new Set<string>();

  constructor(readonly options: AcpClientOptions) {
    this.child = startJsonRpcChild({
      spawn: options.spawn,
      argv: options.argv,
      cwd: options.cwd,
      env: options.env,
      dialect: 'jsonrpc2',
      killGraceMs: options.killGraceMs,
      closeGraceMs: options.killGraceMs,
      ...(options.stderrFile ? { stderrFile: options.stderrFile } : {}),
      ...(options.trace ? { trace: options.trace } : {}),
      onNotification: (method, params) => this.onNotification(method, params),
      onRequest: (method, params, ctx) => this.onRequest(method, params, ctx.signal),
      onDiagnostic: (diagnostic) => this.notice({ kind: 'diagnostic', diagnostic }),
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get connection() {
    return this.child.connection;
  }

  /** Usable for another run: alive and not poisoned. */
  get healthy(): boolean {
    return this.poisonedReason === null && this.child.connection.isOpen;
  }

  stderrTail(): string {
    return this.child.stderrTail();
  }

  /** Mark the child unusable (it is closed by the pool); idempotent. */
  poison(reason: string): void {
    this.poisonedReason ??= reason;
  }

  close() {
    return this.child.close();
  }

  onNotice(listener: (notice: AcpClientNotice) => void): () => void {
    this.noticeListeners.add(listener);
    return () => this.noticeListeners.delete(listener);
  }

  /** Route a session's updates and permission requests to a run. Returns the unsubscribe. */
  attach(sessionId: string, handlers: AcpSessionHandlers): () => void {
    this.sessions.set(sessionId, handlers);
    for (const update of this.early.take(sessionId)) handlers.onUpdate(update);
    return () => {
      if (this.sessions.get(sessionId) !== handlers) return;
      this.sessions.delete(sessionId);
      this.early.retire(sessionId);
    };
  }

  /** `initialize` once per child (protocol v1; fs and terminal capabilities OFF). */
  async initialize(timeoutMs: number): Promise<InitializeResponse> {
    if (this.initialized) return this.initialized;
    const raw = await this.child.connection.request(
      'initialize',
      {
        protocolVersion: ACP_PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: 'ultimate-harness', version: '0.1.0' },
      },
      { timeoutMs },
    );
    const response = parseOrProtocolError(InitializeResponseSchema, raw, 'initialize');
    this.initialized = response;
    return response;
  }

  /** `authenticate`; a null result (Hermes: method not accepted) is returned as false. */
  async authenticate(methodId: string, timeoutMs: number): Promise<boolean> {
    const raw = await this.child.connection.request('authenticate', { methodId }, { timeoutMs });
    return raw !== null;
  }

  async newSession(cwd: string, timeoutMs: number): Promise<string> {
    const raw = await this.child.connection.request('session/new', { cwd, mcpServers: [] }, { timeoutMs });
    const { sessionId } = parseOrProtocolError(NewSessionResponseSchema, raw, 'session/new');
    this.knownSessions.add(sessionId);
    return sessionId;
  }

  /**
   * `session/load`: false when the agent does not know the session (null result). The caller must
   * `attach` BEFORE calling, since history replay may arrive before the reply.
   */
  async loadSession(sessionId: string, cwd: string, timeoutMs: number): Promise<boolean> {
    const raw = await this.child.connection.request('session/load', { sessionId, cwd, mcpServers: [] }, { timeoutMs });
    const response = parseOrProtocolError(LoadSessionResponseSchema, raw, 'session/load');
    if (response === null) return false;
    this.knownSessions.add(sessionId);
    return true;
  }

  /** `session/set_mode`; the result is not used. */
  async setMode(sessionId: string, modeId: string, timeoutMs: number): Promise<void> {
    await this.child.connection.request('session/set_mode', { sessionId, modeId }, { timeoutMs });
  }

  /**
   * `session/prompt` with one text block. Prompts on one session are sent one at a time: a second
   * prompt waits for the first (Hermes answers a prompt on a busy session `end_turn` at once).
   */
  prompt(sessionId: string, text: string, signal?: AbortSignal): Promise<PromptResponse> {
    const previous = this.promptChains.get(sessionId) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const raw = await this.child.connection.request(
          'session/prompt',
          { sessionId, prompt: [{ type: 'text', text }] },
          signal ? { signal } : {},
        );
        return parseOrProtocolError(PromptResponseSchema, raw, 'session/prompt');
      });
    this.promptChains.set(sessionId, next);
    return next;
  }

  /** `session/cancel` is a notification: the pending prompt answers `cancelled`. */
  cancel(sessionId: string): void {
    this.child.connection.notify('session/cancel', { sessionId });
  }

  private notice(notice: AcpClientNotice): void {
    for (const listener of this.noticeListeners) listener(notice);
  }

  private onNotification(method: string, params: unknown): void {
    if (method !== 'session/update') {
      this.notice({ kind: 'unrouted', method, sessionId: sessionIdOf(params) });
      return;
    }
    const parsed = SessionUpdateNotificationSchema.safeParse(params);
    if (!parsed.success) {
      this.notice({ kind: 'unrouted', method, sessionId: sessionIdOf(params) });
      return;
    }
    const handlers = this.sessions.get(parsed.data.sessionId);
    if (handlers) {
      handlers.onUpdate(parsed.data.update);
      return;
    }
    if (!this.early.hold(parsed.data.sessionId, parsed.data.update))
      this.notice({ kind: 'unrouted', method, sessionId: parsed.data.sessionId });
  }

  private async onRequest(method: string, params: unknown, signal: AbortSignal): Promise<unknown> {
    if (method !== 'session/request_permission') {
      this.notice({ kind: 'unsupported_request', method });
      throw JsonRpcRemoteError.methodNotFound(method);
    }
    const parsed = RequestPermissionRequestSchema.safeParse(params);
    if (!parsed.success)
      throw new JsonRpcRemoteError(-32602, `Invalid params: ${parsed.error.issues[0]?.message ?? 'bad request'}`);
    const handlers = this.sessions.get(parsed.data.sessionId);
    if (!handlers) {
      this.notice({ kind: 'unrouted', method, sessionId: parsed.data.sessionId });
      return CANCELLED_ANSWER_WIRE;
    }
    const answer = await handlers.onPermission(parsed.data, signal);
    // Never send a shape the agent would silently read as a deny.
    return RequestPermissionResponseSchema.parse(answer);
  }
}

function sessionIdOf(params: unknown): string | null {
  const id = (params as { sessionId?: unknown } | null | undefined)?.sessionId;
  return typeof id === 'string' ? id : null;
}
