/**
 * The `codex` runtime: one non-interactive `codex exec --json` run in the sandbox, read through
 * the shared CLI-JSONL transport. stdin is closed (codex appends a piped stdin to the prompt);
 * the `--output-last-message` file lives in the log dir, never in the worktree. The final
 * message is that file's sentinel block, else its raw content, else the last agent_message.
 */
import { closeSync, fstatSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { abortReasonOf } from '../../../shared/runtime/v1/runtime-context.js';
import type {
  LaunchPlanV1,
  RuntimeAdapterV1,
  RuntimeContextV1,
  RuntimeEventV1,
} from '../../../shared/runtime/v1/index.js';
import { extractRuntimeFinalMessageSentinel, resolveFinalMessage } from '../../../shared/sentinel.js';
import { runCliJsonl, type CliJsonlExit } from '../../../shared/transport/cli-jsonl.js';
import { redactString } from '../../../shared/redact.js';
import { CodexSettingsSchema, buildCodexArgv, type CodexSettings } from './codex-settings.js';
import {
  codexChildEnv,
  codexEgress,
  codexIsolation,
  codexSecrets,
  effectiveCodexSandbox,
} from '../codex-shared/codex-common-settings.js';
import { CodexEventSchema } from './codex-protocol.js';
import { initialCodexState, translateCodexEvent } from './codex-events.js';
import { classifyCodex } from './classify-codex.js';
import { checkCodex } from '../codex-shared/check-codex.js';
import { NetworkWaitWatch } from './network-wait-watch.js';
import { providerEnv } from '../../../shared/runtime/provider-env.js';

const LAST_MESSAGE_FILE = 'codex-last-message.txt';
/** The -o file is read up to this size; a longer one is cut (memory stays bounded). */
const LAST_MESSAGE_CAP = 1024 * 1024;

/**
 * The -o file's text (at most LAST_MESSAGE_CAP bytes read), or null when codex wrote none.
 * Synchronous, like the two calls before the launch: a small local file, and the only use of
 * `fs/promises` on a codex run would cost more to load (~1 ms) than these calls take.
 */
function readLastMessage(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const buffer = Buffer.alloc(Math.min(fstatSync(fd).size, LAST_MESSAGE_CAP) + 1);
    let bytesRead = 0;
    while (bytesRead < buffer.length) {
      const n = readSync(fd, buffer, bytesRead, buffer.length - bytesRead, bytesRead);
      if (n === 0) break;
      bytesRead += n;
    }
    const text = buffer.subarray(0, Math.min(bytesRead, LAST_MESSAGE_CAP)).toString('utf8');
    return bytesRead > LAST_MESSAGE_CAP ? `${text}\n[… final message truncated by uh]` : text;
  } finally {
    closeSync(fd);
  }
}

export const codexAdapter: RuntimeAdapterV1<CodexSettings> = {
  specificationVersion: 'v1',
  id: 'codex',
  displayName: 'OpenAI Codex CLI (codex exec --json)',
  capabilities: ['non_interactive_run', 'structured_events', 'json_output', 'file_tools', 'terminal'],
  defaultConfig: {},
  configSchema: CodexSettingsSchema,

  secretsOf: codexSecrets,
  envPassthrough: providerEnv('CODEX_HOME'),

  check: (config, ctx) => checkCodex(config.binary, codexChildEnv(config, ctx.env), ctx),

  egress: (config, { env }) => codexEgress(config, env),

  // The -o file lives in the (otherwise hidden) log dir: bound writable, created before the run.
  // A configured codex_home is seeded into the operation's own copy: the user's config.toml is never rewritten.
  isolation: (config, { env, logDir }) => codexIsolation(config, env, [join(logDir, LAST_MESSAGE_FILE)], true),

  async prepare({ config, prompt, workDir }) {
    const argv = buildCodexArgv(
      config,
      workDir,
      join('<log dir>', LAST_MESSAGE_FILE),
      `<prompt: ${prompt.length} chars>`,
    );
    const secrets = codexAdapter.secretsOf(config);
    return {
      config,
      prompt,
      describe: {
        argv: argv.map((a) => redactString(a, secrets)),
        stdin: 'closed',
        env: Object.keys(config.env),
        ...(config.codex_home ? { codex_home: config.codex_home } : {}),
      },
    };
  },

  launch(plan, ctx) {
    return { events: runCodex(plan, ctx) };
  },
};

type CodexState = ReturnType<typeof initialCodexState>;

/** One codex exec run, its JSONL read through the shared transport; ends with its exit. */
async function* codexItems(
  plan: LaunchPlanV1<CodexSettings>,
  ctx: RuntimeContextV1,
  state: CodexState,
  watch: NetworkWaitWatch,
  signal: AbortSignal,
  lastMessageFile: string,
): AsyncGenerator<RuntimeEventV1, CliJsonlExit | undefined> {
  const config = plan.config;
  const sandbox = effectiveCodexSandbox(config.sandbox, ctx.isolation);
  const argv = buildCodexArgv({ ...config, sandbox }, ctx.workDir, lastMessageFile, plan.prompt);
  let exit: CliJsonlExit | undefined;
  for await (const item of runCliJsonl({
    spawn: ctx.spawn,
    argv,
    cwd: ctx.workDir,
    env: codexChildEnv(config, ctx.env),
    schema: CodexEventSchema,
    logDir: ctx.logDir,
    logName: 'codex',
    signal,
    killGraceMs: config.kill_grace_ms,
  })) {
    if (item.kind === 'spawned') state.pid = item.pid;
    else if (item.kind === 'message') {
      if (item.value.type === 'error') watch.notice(item.value.message);
      else watch.progress();
      // The thread id is durable before anyone hears of it: a worker that dies mid-run still
      // knows which codex thread ran (codex keeps it under CODEX_HOME unless --ephemeral).
      if (item.value.type === 'thread.started') await ctx.journal.put({ codex_thread_id: item.value.thread_id });
      yield* translateCodexEvent(item.value, state);
    } else if (item.kind === 'malformed') {
      const data = { source: 'codex.stdout', reason: item.reason, line: item.line, detail: item.detail };
      yield { type: 'runtime.raw', data };
    } else exit = item.exit;
  }
  return exit;
}

async function* runCodex(plan: LaunchPlanV1<CodexSettings>, ctx: RuntimeContextV1): AsyncGenerator<RuntimeEventV1> {
  const config = plan.config;
  const lastMessageFile = join(ctx.logDir, LAST_MESSAGE_FILE);
  rmSync(lastMessageFile, { force: true }); // a stale file from an earlier attempt must not count
  if (ctx.isolation === 'bwrap') writeFileSync(lastMessageFile, ''); // the bind needs it to exist; blank counts as none
  const state = initialCodexState();
  const stop = new AbortController();
  const watch = new NetworkWaitWatch(config.network_wait_ms, () => stop.abort());
  let exit: CliJsonlExit | undefined;
  try {
    exit = yield* codexItems(plan, ctx, state, watch, AbortSignal.any([ctx.signal, stop.signal]), lastMessageFile);
  } finally {
    watch.dispose();
  }
  if (exit === undefined) throw new Error('CLI-JSONL transport ended without an exit item');
  const lastMessage = readLastMessage(lastMessageFile);
  const present = lastMessage !== null && lastMessage.trim() !== '';
  const outcome = classifyCodex({
    binary: config.binary,
    ...(exit.spawnError ? { spawnError: exit.spawnError } : {}),
    exitCode: exit.exitCode,
    signal: exit.signal,
    timedOut: exit.timedOut,
    abort: ctx.signal.aborted ? abortReasonOf(ctx.signal) : null,
    turnCompleted: state.turnCompleted,
    turnFailed: state.turnFailed,
    lastError: state.lastError,
    stderrTail: exit.stderrTail,
    exitMessage: exit.message,
    lastMessagePresent: present,
    gaveUpUnreachable: watch.gaveUp,
  });
  const native = present ? lastMessage : state.lastAgentMessage;
  const sentinel = lastMessage === null ? null : extractRuntimeFinalMessageSentinel(lastMessage);
  const final = resolveFinalMessage(sentinel, native);
  const ids = state.threadId ? { thread_id: state.threadId, session_id: state.threadId } : {};
  const logs = [exit.stdoutLog, exit.stderrLog, lastMessageFile];
  const data = { outcome, ...final, ...ids, ...(state.usage ? { usage: state.usage } : {}), logs };
  yield { type: 'runtime.finished', data: { ...data, malformed_lines: exit.malformed } };
}
