/**
 * The `codex-app-server` runtime: one Codex turn per operation through `codex app-server` over
 * stdio (the shared NDJSON JSON-RPC transport, `codex` dialect), with the turn's identity kept in
 * the runtime journal and its end proven by reading the exact turn back. See
 * `codex-app-server-run.ts` for the states and `docs/runtimes/codex-app-server.md` for the rules.
 */
import type { RuntimeAdapterV1 } from '../../../shared/runtime/v1/index.js';
import { REDACTED } from '../../../shared/redact.js';
import { checkCodex } from '../codex-shared/check-codex.js';
import { codexEgress, codexIsolation, codexSecrets } from '../codex-shared/codex-common-settings.js';
import { recoverCodexAppServerOperation } from './codex-app-server-recover.js';
import { runCodexAppServer } from './codex-app-server-run.js';
import {
  CodexAppServerSettingsSchema,
  appServerEnv,
  buildAppServerArgv,
  type CodexAppServerSettings,
} from './codex-app-server-settings.js';
import { clientMessageIdOf } from './codex-app-server-identity.js';
import { providerEnv } from '../../../shared/runtime/provider-env.js';

export const codexAppServerAdapter: RuntimeAdapterV1<CodexAppServerSettings> = {
  specificationVersion: 'v1',
  id: 'codex-app-server',
  displayName: 'OpenAI Codex app-server (exactly-once turns, read back)',
  capabilities: ['non_interactive_run', 'structured_events', 'json_output', 'file_tools', 'terminal', 'sandbox_native'],
  defaultConfig: {},
  exampleConfig: { binary: 'codex', sandbox: 'workspace-write', approval_policy: 'never', mission_thread: 'resume' },
  configSchema: CodexAppServerSettingsSchema,

  secretsOf: codexSecrets,
  envPassthrough: providerEnv('CODEX_HOME'),

  check: (config, ctx) => checkCodex(config.binary, appServerEnv(config, ctx.env), ctx),

  isolation: (config, { env }) => codexIsolation(config, env),
  egress: (config, { env }) => codexEgress(config, env),

  async prepare({ config, prompt, workDir, mission }) {
    const secrets = codexAppServerAdapter.secretsOf(config);
    const hide = (s: string) =>
      secrets.reduce((out, secret) => (secret.length >= 4 ? out.split(secret).join(REDACTED) : out), s);
    return {
      config,
      prompt,
      describe: {
        argv: buildAppServerArgv(config).map(hide),
        transport: 'JSON-RPC over stdio (codex dialect)',
        thread:
          config.mission_thread === 'resume'
            ? `thread/resume of mission ${mission.missionId} if known, else thread/start`
            : 'thread/start',
        thread_params: {
          cwd: workDir,
          sandbox: config.sandbox,
          approvalPolicy: config.approval_policy,
          ...(config.model ? { model: config.model } : {}),
        },
        turn_start: {
          clientUserMessageId: clientMessageIdOf(mission.operationId),
          input: `<prompt: ${prompt.length} chars>`,
        },
        approvals: config.approvals,
        env: Object.keys(config.env),
        ...(config.codex_home ? { codex_home: config.codex_home } : {}),
      },
    };
  },

  launch(plan, ctx) {
    return { events: runCodexAppServer(plan.config, plan.prompt, ctx) };
  },

  recover(config, ctx) {
    return recoverCodexAppServerOperation(ctx.journal, config, ctx);
  },
};
