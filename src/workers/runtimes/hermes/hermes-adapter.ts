/**
 * The `hermes` runtime: `hermes chat -q <prompt> -Q --source tool …` inside the sandbox, in its
 * own process group. With a CLI that offers it, `--format stream-json` is read through the shared
 * CLI-JSONL transport; older CLIs run in quiet text mode, stdout streamed to disk and scanned.
 * Final message: the sentinel from the stdout text; the fallback is empty (spec table).
 */
import { join } from 'node:path';
import type { Usage } from '../../../shared/contracts/runtime-result.js';
import { SentinelScanner, resolveFinalMessage } from '../../../shared/sentinel.js';
import { abortReasonOf, type RuntimeContextV1 } from '../../../shared/runtime/v1/runtime-context.js';
import type { RuntimeAdapterV1, RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { secretEnvValues } from '../../../shared/redact.js';
import { runCliJsonl } from '../../../shared/transport/cli-jsonl.js';
import { TailBuffer } from '../../../shared/transport/bounded-lines.js';
import { envEndpointEntries } from '../../../shared/runtime/provider-egress.js';
import { HermesLineSchema, sessionIdFromStderr } from './hermes-protocol.js';
import { flushHermesText, hermesUsage, newHermesRunState, translateHermesEvent } from './hermes-events.js';
import { HermesSettingsSchema, type HermesSettings } from './hermes-settings.js';
import { buildHermesArgv, hermesLaunchMode, type HermesLaunchMode } from './hermes-argv.js';
import { detectHermesFeatures } from './hermes-features.js';
import { classifyHermes, type HermesExitFacts } from './classify-hermes.js';
import { checkHermes } from './check-hermes.js';
import { providerEnv } from '../../../shared/runtime/provider-env.js';
import { agentStateEnv } from '../../../shared/runtime/agent-state-env.js';

type Facts = Omit<HermesExitFacts, 'abort'>;

interface RunEnd {
  facts: Facts;
  sessionId: string | null;
  usage: Usage;
  logs: string[];
}

/** What one launch hands to either mode; `end` is filled in as the child exits. */
interface HermesRun {
  config: HermesSettings;
  argv: string[];
  env: Record<string, string | undefined>;
  stdin: 'ignore' | { text: string };
  ctx: RuntimeContextV1;
  scanner: SentinelScanner;
  end: RunEnd;
}

/** stream-json mode: JSONL through the shared transport. */
async function* runStreamJson({
  config,
  argv,
  env,
  stdin,
  ctx,
  scanner,
  end,
}: HermesRun): AsyncGenerator<RuntimeEventV1> {
  const state = newHermesRunState();
  let pid: number | undefined;
  const items = runCliJsonl({
    spawn: ctx.spawn,
    argv,
    cwd: ctx.workDir,
    env,
    schema: HermesLineSchema,
    logDir: ctx.logDir,
    logName: 'hermes',
    stdin,
    signal: ctx.signal,
    killGraceMs: config.kill_grace_ms,
  });
  for await (const item of items) {
    if (item.kind === 'spawned') pid = item.pid;
    else if (item.kind === 'malformed')
      yield {
        type: 'runtime.raw',
        data: { source: 'stdout', reason: item.reason, line: item.line, detail: item.detail },
      };
    else if (item.kind === 'message') {
      if (item.value.type === 'text') scanner.push(item.value.text);
      for (const event of translateHermesEvent(state, item.value, pid)) {
        // Durable before anyone sees it: a crash of uh still leaves the session id behind.
        if (event.type === 'runtime.started' && state.sessionId)
          await ctx.journal.put({ session_id: state.sessionId, pid });
        yield event;
      }
    } else {
      yield* flushHermesText(state);
      const exit = item.exit;
      end.facts = {
        binary: config.binary,
        mode: 'stream-json',
        exitCode: exit.exitCode,
        signal: exit.signal,
        timedOut: exit.timedOut,
        stderrTail: exit.stderrTail,
        stdoutTail: '',
        result: state.result,
        ...(exit.spawnError ? { spawnError: exit.spawnError } : {}),
      };
      end.sessionId = state.sessionId ?? sessionIdFromStderr(exit.stderrTail);
      end.usage = hermesUsage(state.result?.tokens);
      // The result repeats the final response: it matters when no text deltas were streamed.
      if (state.result?.text) scanner.push(`\n${state.result.text}\n`);
      end.logs = [exit.stdoutLog, exit.stderrLog];
    }
  }
}

/** Quiet text mode (`-Q`, no `--format`): stdout is the answer, `session_id: …` is on stderr. */
async function* runText({ config, argv, env, stdin, ctx, scanner, end }: HermesRun): AsyncGenerator<RuntimeEventV1> {
  const stdoutLog = join(ctx.logDir, 'hermes.stdout.log');
  const stderrLog = join(ctx.logDir, 'hermes.stderr.log');
  const stdoutTail = new TailBuffer(4096);
  const stderrTail = new TailBuffer(4096);
  const decoder = new TextDecoder();
  const child = ctx.spawn({
    argv,
    cwd: ctx.workDir,
    env,
    stdin,
    stdout: {
      file: stdoutLog,
      tap: (chunk) => {
        stdoutTail.push(chunk);
        scanner.push(decoder.decode(chunk, { stream: true }));
      },
    },
    stderr: { file: stderrLog, tap: (chunk) => stderrTail.push(chunk) },
    signal: ctx.signal,
    killGraceMs: config.kill_grace_ms,
  });
  yield { type: 'runtime.started', data: { ...(child.pid !== undefined ? { pid: child.pid } : {}), format: 'text' } };
  const exit = await child.result;
  scanner.push(decoder.decode());
  const errText = stderrTail.text();
  end.facts = {
    binary: config.binary,
    mode: 'text',
    exitCode: exit.exitCode,
    signal: exit.signal,
    timedOut: exit.timedOut,
    stderrTail: errText,
    stdoutTail: stdoutTail.text(),
    result: null,
    ...(exit.spawnError ? { spawnError: exit.spawnError } : {}),
  };
  end.sessionId = sessionIdFromStderr(errText);
  end.logs = [stdoutLog, stderrLog];
}

function describeArgv(argv: string[], prompt: string): string[] {
  return argv.map((a) => (a === prompt ? `<prompt: ${prompt.length} chars>` : a));
}

export const hermesAdapter: RuntimeAdapterV1<HermesSettings> = {
  specificationVersion: 'v1',
  id: 'hermes',
  displayName: 'Hermes Agent (hermes chat -q)',
  capabilities: [
    'non_interactive_run',
    'structured_events',
    'json_output',
    'file_tools',
    'terminal',
    'skills',
    'subagents',
    'browser',
  ],
  defaultConfig: {},
  configSchema: HermesSettingsSchema,
  secretsOf: (config) => secretEnvValues(config.env),
  envPassthrough: providerEnv('HERMES_HOME'),
  check: (config, ctx) => checkHermes(config, ctx),
  // Under uh's isolation: a HERMES_HOME (or HOME) set in env becomes the operation's own writable copy.
  isolation: (config) => ({ writable: [], ...agentStateEnv(config.env) }),
  // Egress mode: the endpoints its env names (`OPENAI_BASE_URL`…); a config.yaml provider needs sandbox.egress.
  egress: (config, { env }) => envEndpointEntries({ ...env, ...config.env }),

  async prepare({ config, prompt }) {
    // The format is known only at launch (`auto` reads `hermes chat --help`); show the preferred one.
    const mode: HermesLaunchMode = { format: config.format === 'text' ? 'text' : 'stream-json', promptViaStdin: false };
    return {
      config,
      prompt,
      describe: {
        argv: describeArgv(buildHermesArgv(config, prompt, mode), prompt),
        format: config.format,
        prompt_via: config.prompt_via,
        env: Object.keys(config.env),
      },
    };
  },

  launch(plan, ctx) {
    const config = plan.config;
    async function* run(): AsyncGenerator<RuntimeEventV1> {
      const env = {
        ...ctx.env,
        ...config.env,
        UH_OPERATION_ID: ctx.mission.operationId,
        UH_MISSION_ID: ctx.mission.missionId,
      };
      const needsHelp = config.format === 'auto' || config.prompt_via === 'auto';
      const features = needsHelp
        ? await detectHermesFeatures(ctx.spawn, config.binary, env, ctx.signal)
        : { streamJson: false, queryFile: false };
      const mode = hermesLaunchMode(config, features);
      const argv = buildHermesArgv(config, plan.prompt, mode);
      const stdin = mode.promptViaStdin ? { text: plan.prompt } : ('ignore' as const);
      const scanner = new SentinelScanner();
      const end: RunEnd = {
        facts: {
          binary: config.binary,
          mode: mode.format,
          exitCode: null,
          signal: null,
          timedOut: false,
          stderrTail: '',
          stdoutTail: '',
          result: null,
        },
        sessionId: null,
        usage: {},
        logs: [],
      };
      const hermesRun: HermesRun = { config, argv, env, stdin, ctx, scanner, end };
      yield* mode.format === 'stream-json' ? runStreamJson(hermesRun) : runText(hermesRun);
      const outcome = classifyHermes({ ...end.facts, abort: ctx.signal.aborted ? abortReasonOf(ctx.signal) : null });
      yield {
        type: 'runtime.finished',
        data: {
          outcome,
          // Hermes has no native summary: no sentinel means an empty final message.
          ...resolveFinalMessage(scanner.result(), null),
          ...(end.sessionId ? { session_id: end.sessionId } : {}),
          ...(Object.keys(end.usage).length > 0 ? { usage: end.usage } : {}),
          format: mode.format,
          logs: end.logs,
        },
      };
    }
    return { events: run() };
  },
};
