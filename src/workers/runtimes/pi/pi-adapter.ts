/**
 * The `pi` and `oh-my-pi` runtimes: one implementation of `<pi|omp> --print --mode json
 * --no-session …` over the shared CLI-JSONL transport, registered twice with its own defaults.
 * The child runs in the sandbox in its own process group; stdout/stderr go to the log dir.
 */
import { envEndpointEntries, jsonBaseUrlEntries, PROVIDER_HOSTS } from '../../../shared/runtime/provider-egress.js';
import { SentinelScanner, resolveFinalMessage } from '../../../shared/sentinel.js';
import { abortReasonOf } from '../../../shared/runtime/v1/runtime-context.js';
import type { RuntimeAdapterV1, RuntimeContextV1, RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { redact, secretEnvValues } from '../../../shared/redact.js';
import { runCliJsonl, type CliJsonlExit } from '../../../shared/transport/cli-jsonl.js';
import { PiLineSchema, type PiLine } from './pi-protocol.js';
import { newPiRunState, translatePiEvent, type PiRunState } from './pi-events.js';
import { piSettingsSchema, type PiDefaults, type PiSettings } from './pi-settings.js';
import { classifyPi } from './classify-pi.js';
import { checkPi } from './check-pi.js';
import { providerEnv } from '../../../shared/runtime/provider-env.js';

/** One registration of the pi JSON-mode implementation. */
export interface PiVariant extends PiDefaults {
  id: string;
  displayName: string;
  /** Where the operator gets the binary, for hints. */
  install: string;
  /** The agent dir's variable and its default under the home (pi: `PI_CODING_AGENT_DIR`, `~/.pi/agent`). */
  agentDir: { env: string; home: string };
}

/** The argv, prompt excluded when it goes through stdin. Never passed through a shell. */
export function buildPiArgv(config: PiSettings, prompt: string): string[] {
  const argv = [config.binary, '--print', '--mode', 'json', '--no-session'];
  if (config.provider) argv.push('--provider', config.provider);
  if (config.model) argv.push('--model', config.model);
  if (config.thinking) argv.push('--thinking', config.thinking);
  if (config.tools) argv.push('--tools', config.tools.join(','));
  if (!config.extensions) argv.push('--no-extensions');
  if (!config.skills) argv.push('--no-skills');
  if (!config.context_files) argv.push('--no-context-files');
  if (config.append_system_prompt) argv.push('--append-system-prompt', config.append_system_prompt);
  argv.push(...config.extra_args);
  // pi reads a leading `@` as a file to attach and a leading `-` as a flag.
  if (config.prompt_via === 'argv') argv.push(/^[-@]/.test(prompt) ? `\n${prompt}` : prompt);
  return argv;
}

export function createPiAdapter(variant: PiVariant): RuntimeAdapterV1<PiSettings> {
  const secretsOf = piSecrets;
  return {
    specificationVersion: 'v1',
    id: variant.id,
    displayName: variant.displayName,
    capabilities: ['non_interactive_run', 'structured_events', 'json_output', 'file_tools', 'terminal', 'skills'],
    defaultConfig: { binary: variant.binary, prompt_via: variant.prompt_via },
    configSchema: piSettingsSchema(variant),
    secretsOf,
    envPassthrough: providerEnv('PI_CODING_AGENT_DIR', 'OMP_*'),

    check: (config, ctx) => checkPi(variant, config, ctx),

    // Under uh's isolation the home is private: pi's agent dir (providers, models, login, sessions)
    // is the tenant's own persistent copy on this worker, seeded from the configured one.
    isolation: (config, { env }) => {
      const named = variant.agentDir.env;
      const agentDir = config.env[named] ?? env[named] ?? (env.HOME && `${env.HOME}/${variant.agentDir.home}`);
      return agentDir ? { writable: [], state: { [named]: agentDir }, persistent: true } : { writable: [] };
    },

    // Egress mode: the baseUrl of each provider in its models.json, a built-in provider's endpoint, env endpoints.
    egress: (config, { env }) => {
      const agentDir =
        config.env.PI_CODING_AGENT_DIR ?? env.PI_CODING_AGENT_DIR ?? (env.HOME && `${env.HOME}/.pi/agent`);
      const provider = config.provider ?? config.model?.split('/')[0];
      return [
        ...(agentDir ? jsonBaseUrlEntries(`${agentDir}/models.json`) : []),
        ...(provider ? (PROVIDER_HOSTS[provider] ?? []) : []),
        ...envEndpointEntries({ ...env, ...config.env }),
      ];
    },

    async prepare({ config, prompt }) {
      const argv = buildPiArgv(config, prompt).map((a) =>
        a === prompt || a === `\n${prompt}` ? `<prompt: ${prompt.length} chars>` : a,
      );
      const describe = { argv, prompt_via: config.prompt_via, env: Object.keys(config.env), offline: config.offline };
      return { config, prompt, describe: redact(describe, secretsOf(config)) };
    },

    launch: (plan, ctx) => ({ events: runPi(variant, plan.config, plan.prompt, ctx) }),
  };
}

/** The env values, and an `--api-key <key>` passed through extra_args: secrets too. */
function piSecrets(config: PiSettings): string[] {
  return [
    ...secretEnvValues(config.env),
    ...config.extra_args.filter((_, i) => config.extra_args[i - 1] === '--api-key'),
  ];
}

/** What the translation of one run accumulates, read by the terminal event. */
interface PiRun {
  variant: PiVariant;
  config: PiSettings;
  ctx: RuntimeContextV1;
  state: PiRunState;
  scanner: SentinelScanner;
  pid: number | undefined;
}

/** spawn → translate each JSONL line → one runtime.finished from the exit item. */
async function* runPi(
  variant: PiVariant,
  config: PiSettings,
  prompt: string,
  ctx: RuntimeContextV1,
): AsyncGenerator<RuntimeEventV1> {
  const env: Record<string, string | undefined> = {
    ...ctx.env,
    ...config.env,
    UH_OPERATION_ID: ctx.mission.operationId,
    UH_MISSION_ID: ctx.mission.missionId,
  };
  if (config.offline) env.PI_OFFLINE = '1';
  const run: PiRun = { variant, config, ctx, state: newPiRunState(), scanner: new SentinelScanner(), pid: undefined };
  const items = runCliJsonl({
    spawn: ctx.spawn,
    argv: buildPiArgv(config, prompt),
    cwd: ctx.workDir,
    env,
    schema: PiLineSchema,
    logDir: ctx.logDir,
    logName: variant.id,
    stdin: config.prompt_via === 'stdin' ? { text: prompt } : 'ignore',
    signal: ctx.signal,
    killGraceMs: config.kill_grace_ms,
  });
  for await (const item of items) {
    if (item.kind === 'spawned') run.pid = item.pid;
    else if (item.kind === 'message') yield* translateLine(run, item.value);
    else if (item.kind === 'malformed')
      yield {
        type: 'runtime.raw',
        data: { source: 'stdout', reason: item.reason, line: item.line, detail: item.detail },
      };
    else return yield finishedEvent(run, item.exit);
  }
}

async function* translateLine(run: PiRun, line: PiLine): AsyncGenerator<RuntimeEventV1> {
  for (const event of translatePiEvent(run.state, line, run.pid)) {
    if (event.type === 'runtime.message') run.scanner.push(`${event.data.text}\n`);
    // Durable before anyone sees it: a crash of uh still leaves the session id behind.
    if (event.type === 'runtime.started')
      await run.ctx.journal.put({ session_id: event.data.session_id, pid: run.pid });
    yield event;
  }
}

function finishedEvent(run: PiRun, exit: CliJsonlExit): RuntimeEventV1 {
  const { state, scanner, config, variant, ctx } = run;
  const finalText = state.lastAssistantText ?? state.agentEndText;
  if (state.lastAssistantText === null && state.agentEndText !== null) scanner.push(state.agentEndText);
  const outcome = classifyPi({
    runtime: variant.id,
    binary: config.binary,
    install: variant.install,
    exitCode: exit.exitCode,
    signal: exit.signal,
    timedOut: exit.timedOut,
    abort: ctx.signal.aborted ? abortReasonOf(ctx.signal) : null,
    ...(exit.spawnError ? { spawnError: exit.spawnError } : {}),
    stderrTail: exit.stderrTail,
    lastStopReason: state.lastStopReason,
    lastErrorMessage: state.lastErrorMessage,
    finalText,
  });
  return {
    type: 'runtime.finished',
    data: {
      outcome,
      ...resolveFinalMessage(scanner.result(), finalText),
      ...(state.sessionId ? { session_id: state.sessionId } : {}),
      usage: state.usage,
      tool_calls: state.toolCalls,
      logs: [exit.stdoutLog, exit.stderrLog],
    },
  };
}

/** `pi` (@mariozechner/pi-coding-agent): the prompt goes through stdin, which pi reads as the first message. */
export const piAdapter = createPiAdapter({
  id: 'pi',
  displayName: 'pi coding agent (pi --mode json)',
  binary: 'pi',
  prompt_via: 'stdin',
  install: 'npm i -g @mariozechner/pi-coding-agent (on PATH), or set runtime_config.binary to its path',
  agentDir: { env: 'PI_CODING_AGENT_DIR', home: '.pi/agent' },
});
