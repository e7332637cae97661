/**
 * The connecting and session states of an ACP run: a pooled child answers `initialize` (and
 * authenticates up front when asked), then `openSession` reuses a session live on this child,
 * loads a stored one (its history replay swallowed), or starts a new one (authenticating on
 * demand). `attach` routes the session's updates and permission requests to this run.
 */
import { join } from 'node:path';
import { JsonRpcRemoteError } from '../../../shared/transport/jsonrpc-errors.js';
import type { AcpClient } from './acp-client.js';
import { mergeToolCall, translateSessionUpdate } from './acp-events.js';
import { selectAuthMethod } from './acp-auth.js';
import { AcpProtocolError } from './acp-protocol-error.js';
import { ACP_AUTH_REQUIRED_CODE, ACP_PROTOCOL_VERSION, type InitializeResponse } from './acp-protocol.js';
import { logEvent, type AcpRun } from './acp-run-context.js';
import { abortable, AuthRequiredError, delay, noticeEvent } from './acp-run-support.js';

export interface Connected {
  client: AcpClient;
  init: InitializeResponse;
  /** Stop forwarding the child's notices to this run. */
  unNotice: () => void;
}

export interface OpenedSession {
  id: string;
  resumed: boolean;
}

/** A pooled child for this run's argv and env, initialized (and authenticated up front when configured). */
export async function connect(run: AcpRun): Promise<Connected> {
  const { config, ctx } = run;
  const client = run.spec.pool.acquire(
    {
      spawn: ctx.spawn,
      argv: config.command,
      cwd: ctx.workDir,
      env: { ...ctx.env, ...config.env },
      stderrFile: join(ctx.logDir, 'runtime.stderr.log'),
      killGraceMs: config.kill_grace_ms,
    },
    { argv: config.command, env: config.env },
  );
  run.facts.client = client;
  const unNotice = client.onNotice((notice) => run.emit(noticeEvent(notice)));
  try {
    const init = await abortable(client.initialize(config.request_timeout_ms), ctx.signal);
    if (init.protocolVersion !== ACP_PROTOCOL_VERSION) {
      throw new AcpProtocolError(
        `the agent speaks ACP protocol version ${init.protocolVersion}; uh speaks ${ACP_PROTOCOL_VERSION}`,
      );
    }
    if (config.auth_mode === 'upfront' && !client.knownSessions.size)
      await abortable(authenticate(run, client), ctx.signal);
    return { client, init, unNotice };
  } catch (error) {
    unNotice();
    throw error;
  }
}

/** Reuse, load or start the session this run prompts. */
export async function openSession(run: AcpRun, c: AcpClient, loadSession: boolean): Promise<OpenedSession> {
  const wanted = run.config.session_id;
  if (wanted && c.knownSessions.has(wanted)) return { id: wanted, resumed: true }; // live on this child: no reload
  if (wanted && loadSession) {
    if (await loadStored(run, c, wanted)) return { id: wanted, resumed: true };
    run.emit(logEvent('warn', `the agent does not know session ${wanted}; starting a new session`));
  } else if (wanted) {
    run.emit(
      logEvent(
        'warn',
        `the agent cannot load sessions (no loadSession capability); starting a new session instead of ${wanted}`,
      ),
    );
  }
  return { id: await newSessionWithAuth(run, c), resumed: false };
}

/** `session/load`, its history replay swallowed; false when the agent does not know the session. */
async function loadStored(run: AcpRun, c: AcpClient, id: string): Promise<boolean> {
  const { config, ctx } = run;
  run.facts.replaying = true;
  const detach = attach(run, c, id);
  let loaded = false;
  try {
    loaded = await c.loadSession(id, ctx.workDir, config.request_timeout_ms);
    // Older agents replay after the reply: keep treating updates as replay for a moment.
    if (loaded && config.load_settle_ms > 0) await delay(config.load_settle_ms, ctx.signal);
    return loaded;
  } finally {
    run.facts.replaying = false;
    if (run.transcript.replayed > 0)
      run.emit(
        logEvent(
          'info',
          `session/load replayed ${run.transcript.replayed} history update(s); not treated as new output`,
        ),
      );
    if (!loaded) detach();
  }
}

/** Authenticate with the configured (or only usable) method; false when the agent offers none. */
async function authenticate(run: AcpRun, c: AcpClient): Promise<boolean> {
  const selection = selectAuthMethod(c.initialized?.authMethods ?? [], run.config.auth_method_id);
  if ('error' in selection) throw new AuthRequiredError(selection.error);
  if ('none' in selection) return false;
  const accepted = await c.authenticate(selection.method.id, run.config.request_timeout_ms);
  run.emit(
    logEvent(
      accepted ? 'info' : 'warn',
      `authenticate ${selection.method.id}: ${accepted ? 'accepted' : 'not accepted (null result)'}`,
    ),
  );
  return true;
}

async function newSessionWithAuth(run: AcpRun, c: AcpClient): Promise<string> {
  const { config, ctx } = run;
  try {
    return await c.newSession(ctx.workDir, config.request_timeout_ms);
  } catch (error) {
    if (!isAuthRequired(error) || config.auth_mode !== 'on_demand') throw error;
    if (!(await authenticate(run, c))) throw new AuthRequiredError(`session/new: ${error.rpcMessage}`);
    try {
      return await c.newSession(ctx.workDir, config.request_timeout_ms);
    } catch (retry) {
      if (isAuthRequired(retry)) throw new AuthRequiredError(`session/new after authenticate: ${retry.rpcMessage}`);
      throw retry;
    }
  }
}

function isAuthRequired(error: unknown): error is JsonRpcRemoteError {
  return JsonRpcRemoteError.isInstance(error) && error.code === ACP_AUTH_REQUIRED_CODE;
}

/**
 * Route one session's updates and permission requests to this run. A permission request is
 * decided on everything known about its tool call: its `toolCall` merged over the earlier
 * `tool_call`/`tool_call_update` reports (some agents omit the kind or locations there).
 */
export function attach(run: AcpRun, c: AcpClient, id: string): () => void {
  const { transcript } = run;
  return c.attach(id, {
    onUpdate: (update) => {
      for (const event of translateSessionUpdate(update, transcript, run.facts.replaying)) run.emit(event);
    },
    onPermission: (request, signal) => {
      const toolCall = mergeToolCall(transcript, request.toolCall);
      // Some agents (Qwen Code) announce a tool only in its permission request: keep its title.
      if (toolCall.title && !transcript.turnTools.has(toolCall.toolCallId))
        transcript.turnTools.set(toolCall.toolCallId, toolCall.title);
      return run.broker.handle({ ...request, toolCall }, signal);
    },
  });
}
