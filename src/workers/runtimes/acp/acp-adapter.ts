/**
 * The generic `acp` runtime: any Agent Client Protocol agent, started from
 * `runtime_config.command` (`["qwen", "--acp"]`, `["gemini", "--acp"]`, `["opencode", "acp"]`,
 * `["codex-acp"]`…) with `env`, driven over JSON-RPC on stdio. `hermes-acp` is the same machinery
 * with Hermes defaults (`createAcpAdapter`).
 */
import { join } from 'node:path';
import {
  envEndpointEntries,
  jsonTextBaseUrlEntries,
  tomlBaseUrlEntries,
} from '../../../shared/runtime/provider-egress.js';
import type { z } from 'zod';
import { secretEnvValues } from '../../../shared/redact.js';
import type { RuntimeAdapterV1 } from '../../../shared/runtime/v1/index.js';
import { AcpClientPool } from './acp-pool.js';
import { checkAcpAgent } from './check-acp.js';
import { runAcp } from './acp-run.js';
import { AcpSettingsSchema, type AcpCommonSettings, type AcpSettings } from './acp-settings.js';
import type { AcpHints } from './classify-acp.js';
import { providerEnv } from '../../../shared/runtime/provider-env.js';
import { agentStateEnv } from '../../../shared/runtime/agent-state-env.js';

export interface AcpAdapterSpec<Config extends AcpCommonSettings> {
  id: string;
  displayName: string;
  configSchema: z.ZodType<Config>;
  defaultConfig: Record<string, unknown>;
  /** What `uh adapter add` writes into a new manifest. */
  exampleConfig?: Record<string, unknown>;
  hints: (config: Config) => AcpHints;
}

/** Build an ACP runtime adapter. Each adapter owns its pool of agent children (one per work dir). */
export function createAcpAdapter<Config extends AcpCommonSettings>(
  spec: AcpAdapterSpec<Config>,
): RuntimeAdapterV1<Config> & { readonly pool: AcpClientPool } {
  const pool = new AcpClientPool();
  return {
    specificationVersion: 'v1',
    id: spec.id,
    displayName: spec.displayName,
    capabilities: ['non_interactive_run', 'structured_events', 'interactive_steering', 'resume'],
    defaultConfig: spec.defaultConfig,
    ...(spec.exampleConfig ? { exampleConfig: spec.exampleConfig } : {}),
    configSchema: spec.configSchema,
    pool,
    secretsOf: (config) => secretEnvValues(config.env),
    envPassthrough: providerEnv('HERMES_HOME', 'QWEN_*', 'GEMINI_*', 'OPENCODE_*', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME'),

    // Under uh's isolation: the agent's configured HOME / XDG / *_HOME dirs become writable copies of the operation's own.
    isolation: (config) => ({ writable: [], ...agentStateEnv(config.env) }),

    // Egress mode: the provider endpoints its env names (`OPENAI_BASE_URL`, a JSON config's
    // `baseURL`, the `base_url`s of `$CODEX_HOME/config.toml` for codex-acp).
    egress: (config, { env }) => {
      const all = { ...env, ...config.env };
      const json = Object.values(all).filter((v): v is string => v?.trimStart().startsWith('{') === true);
      const codexHome = config.env.CODEX_HOME;
      const toml = codexHome ? tomlBaseUrlEntries(join(codexHome, 'config.toml')) : [];
      return [...envEndpointEntries(all), ...json.flatMap(jsonTextBaseUrlEntries), ...toml];
    },

    async check(config, ctx) {
      return checkAcpAgent(config, ctx, spec.hints(config));
    },

    async prepare({ config, prompt }) {
      return {
        config,
        prompt,
        describe: {
          argv: config.command,
          wire: 'ACP v1, JSON-RPC 2.0 over stdio (NDJSON)',
          env: Object.keys(config.env),
          permission_policy: config.permission_policy,
          auth_mode: config.auth_mode,
          ...(config.session_id ? { session_id: config.session_id } : {}),
          ...(config.reasoning_level ? { reasoning_level: config.reasoning_level } : {}),
        },
      };
    },

    launch(plan, ctx) {
      return runAcp(plan, ctx, { pool, hints: spec.hints(plan.config) });
    },
  };
}

export const acpAdapter = createAcpAdapter<AcpSettings>({
  id: 'acp',
  displayName: 'Any Agent Client Protocol agent (runtime_config.command)',
  configSchema: AcpSettingsSchema,
  defaultConfig: {},
  exampleConfig: { command: ['qwen', '--acp'], env: {}, permission_policy: 'sandbox' },
  hints: (config) => ({
    install: `install the agent or fix runtime_config.command[0] (${config.command[0] ?? ''}); check with "uh adapter check acp"`,
    auth: `log the agent in on this worker with its own login command, or set runtime_config.auth_method_id / its API key in runtime_config.env`,
  }),
});
