/**
 * The `command` runtime: runs `runtime_config.argv` inside the sandbox as the "agent", with the
 * prompt on stdin (or in the file named by `UH_PROMPT_FILE`). stdout and stderr go straight to
 * log files; the final-message sentinel and the usage block are scanned from stdout as it
 * streams; the agent may also write its usage to `$UH_USAGE_FILE` (shared/runtime/usage-report.ts).
 */
import { LIMITS } from '../../../shared/contracts/input-limits.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SentinelScanner, resolveFinalMessage } from '../../../shared/sentinel.js';
import { abortReasonOf } from '../../../shared/runtime/v1/runtime-context.js';
import { secretEnvValues } from '../../../shared/redact.js';
import type { RuntimeAdapterV1, RuntimeEventV1 } from '../../../shared/runtime/v1/index.js';
import { checkProgram } from '../../../shared/process/check-program.js';
import { CommandSettingsSchema, type CommandSettings } from './command-settings.js';
import { classifyCommand } from './classify-command.js';
import {
  pickUsageReport,
  readUsageFile,
  USAGE_FILE,
  usageScanner,
  type UsageReport,
} from '../../../shared/runtime/usage-report.js';

/** The events of the agent's usage report: notes on ignored reports, then the usage itself. */
function usageEvents(block: string | null, file: string): { events: RuntimeEventV1[]; report: UsageReport | null } {
  const { report, problems } = pickUsageReport(block, readUsageFile(file));
  const events: RuntimeEventV1[] = problems.map((p) => ({
    type: 'runtime.log',
    data: { level: 'warn', message: `usage report ignored: ${p}` },
  }));
  if (report && Object.keys(report.usage).length > 0)
    events.push({ type: 'runtime.usage', data: { ...report.usage, cumulative: true } });
  return { events, report };
}

export const commandAdapter: RuntimeAdapterV1<CommandSettings> = {
  specificationVersion: 'v1',
  id: 'command',
  displayName: 'Command (any program as the agent)',
  capabilities: ['non_interactive_run'],
  defaultConfig: {},
  exampleConfig: { argv: ['sh', '-c', 'echo "edit files here; the prompt is on stdin"'], prompt_via: 'stdin' },
  configSchema: CommandSettingsSchema,
  secretsOf: (config) => secretEnvValues(config.env),
  // Under isolation the usage file is the one path of the log dir the agent may write.
  isolation: (_config, { logDir }) => ({ writable: [join(logDir, USAGE_FILE)] }),

  async check(config, ctx) {
    return checkProgram(config.argv[0] ?? '', ctx);
  },

  async prepare({ config, prompt }) {
    return {
      config,
      prompt,
      describe: { argv: config.argv, prompt_via: config.prompt_via, env: Object.keys(config.env) },
    };
  },

  launch(plan, ctx) {
    const config = plan.config;
    async function* run(): AsyncGenerator<RuntimeEventV1> {
      let promptDir: string | undefined;
      const env: Record<string, string | undefined> = { ...ctx.env, ...config.env };
      env.UH_OPERATION_ID = ctx.mission.operationId;
      env.UH_MISSION_ID = ctx.mission.missionId;
      env.UH_USAGE_FILE = join(ctx.logDir, USAGE_FILE);
      writeFileSync(env.UH_USAGE_FILE, ''); // the bind under isolation needs it to exist; blank is no report
      if (config.prompt_via === 'file') {
        // Outside the work dir so the prompt never shows up in the diff.
        promptDir = await mkdtemp(join(tmpdir(), 'uh-prompt-'));
        env.UH_PROMPT_FILE = join(promptDir, 'prompt.md');
        await writeFile(env.UH_PROMPT_FILE, plan.prompt);
      }
      const scanner = new SentinelScanner();
      const usage = usageScanner();
      const decoder = new TextDecoder();
      const stdoutLog = join(ctx.logDir, 'runtime.stdout.log');
      const stderrLog = join(ctx.logDir, 'runtime.stderr.log');
      try {
        const child = ctx.spawn({
          argv: config.argv,
          cwd: ctx.workDir,
          env,
          stdin: config.prompt_via === 'stdin' ? { text: plan.prompt } : 'ignore',
          stdout: {
            file: stdoutLog,
            tap: (chunk) => {
              const text = decoder.decode(chunk, { stream: true });
              scanner.push(text);
              usage.push(text);
            },
          },
          stderr: { file: stderrLog, maxBytes: LIMITS.logBytes },
          signal: ctx.signal,
          killGraceMs: config.kill_grace_ms,
        });
        yield { type: 'runtime.started', data: { pid: child.pid, argv: config.argv } };
        const exit = await child.result;
        const rest = decoder.decode();
        scanner.push(rest);
        usage.push(rest);
        const reported = usageEvents(usage.result(), env.UH_USAGE_FILE);
        yield* reported.events;
        const outcome = classifyCommand({
          exitCode: exit.exitCode,
          signal: exit.signal,
          timedOut: exit.timedOut,
          abort: ctx.signal.aborted ? abortReasonOf(ctx.signal) : null,
          program: config.argv[0] ?? '',
          ...(exit.spawnError ? { spawnError: exit.spawnError } : {}),
        });
        yield {
          type: 'runtime.finished',
          data: {
            outcome,
            ...resolveFinalMessage(scanner.result(), null),
            logs: [stdoutLog, stderrLog],
            ...(reported.report ? { usage: reported.report.usage } : {}),
            ...(reported.report?.model ? { model: reported.report.model } : {}),
            ...(reported.report?.version ? { runtime_version: reported.report.version } : {}),
          },
        };
      } finally {
        if (promptDir) await rm(promptDir, { recursive: true, force: true });
      }
    }
    return { events: run() };
  },
};
