/**
 * `uh adapter check` for ACP runtimes: is the program on PATH, and does it answer `initialize`
 * as an ACP v1 agent? Starts the agent in a scratch dir (removed afterwards), reads its identity,
 * capabilities and auth methods, then closes it. Never throws.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { whichProgram } from '../../../shared/process/check-program.js';
import type { AdapterCheckV1, CheckContextV1 } from '../../../shared/runtime/v1/index.js';
import { AcpClient } from './acp-client.js';
import { isTerminalMethod, selectAuthMethod } from './acp-auth.js';
import { ACP_PROTOCOL_VERSION } from './acp-protocol.js';
import type { AcpCommonSettings } from './acp-settings.js';
import { toFailure } from './acp-run-support.js';
import type { AcpHints } from './classify-acp.js';

/** Upper bound on the handshake during a check, whatever `request_timeout_ms` says. */
const CHECK_TIMEOUT_MS = 15_000;

export async function checkAcpAgent(
  config: AcpCommonSettings,
  ctx: CheckContextV1,
  hints: AcpHints,
): Promise<AdapterCheckV1> {
  const program = config.command[0] ?? '';
  const env = { ...ctx.env, ...config.env };
  const found = whichProgram(program, env);
  if (found === null) {
    return {
      ok: false,
      summary: `program not found: ${program}`,
      errors: [`${program} is not on PATH (or not executable)`],
      hint: hints.install,
    };
  }
  let scratch: string | undefined;
  let client: AcpClient | undefined;
  try {
    const cwd = ctx.workDir ?? (scratch = await mkdtemp(join(tmpdir(), 'uh-acp-check-')));
    client = new AcpClient({ spawn: ctx.spawn, argv: config.command, cwd, env, killGraceMs: 500 });
    const init = await client.initialize(Math.min(config.request_timeout_ms, CHECK_TIMEOUT_MS));
    const methods = init.authMethods ?? [];
    const agent = [init.agentInfo?.name, init.agentInfo?.version].filter(Boolean).join(' ') || program;
    const details = {
      agent: init.agentInfo ?? null,
      protocol_version: init.protocolVersion,
      load_session: init.agentCapabilities?.loadSession === true,
      auth_methods: methods.map((m) => ({ id: m.id, terminal: isTerminalMethod(m) })),
    };
    const summary = `${agent} at ${found} (ACP v${init.protocolVersion}, loadSession ${details.load_session ? 'yes' : 'no'}, auth: ${methods.map((m) => m.id + (isTerminalMethod(m) ? ' (terminal)' : '')).join(', ') || 'none'})`;
    if (init.protocolVersion !== ACP_PROTOCOL_VERSION) {
      return {
        ok: false,
        summary,
        errors: [`the agent speaks ACP v${init.protocolVersion}; uh speaks v${ACP_PROTOCOL_VERSION}`],
        details,
        hint: hints.install,
      };
    }
    const selection = selectAuthMethod(methods, config.auth_method_id);
    if ('error' in selection && (config.auth_mode === 'upfront' || config.auth_method_id !== undefined)) {
      return { ok: false, summary, errors: [selection.error], details, hint: hints.auth };
    }
    return {
      ok: true,
      summary,
      errors: [],
      details,
      ...(init.agentInfo?.version ? { version: init.agentInfo.version } : {}),
    };
  } catch (error) {
    const failure = toFailure(error);
    const tail = client?.stderrTail().trim().split('\n').slice(-3).join(' | ');
    return {
      ok: false,
      summary: `${program} did not answer initialize as an ACP agent`,
      errors: [failure.message, ...(tail ? [`stderr: ${tail}`] : [])],
      hint:
        failure.kind === 'spawn'
          ? hints.install
          : `check that ${config.command.join(' ')} starts an ACP agent on stdio`,
    };
  } finally {
    await client?.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}
