/**
 * `hermes-acp`: Hermes (NousResearch hermes-agent) driven as `hermes acp`, an ACP agent on stdio,
 * one child per work dir. Everything but the defaults and hints is the shared ACP machinery.
 */
import { createAcpAdapter } from '../acp/acp-adapter.js';
import { HERMES_HINTS } from './hermes-acp-hints.js';
import { HermesAcpSettingsSchema, type HermesAcpSettings } from './hermes-acp-settings.js';

export const hermesAcpAdapter = createAcpAdapter<HermesAcpSettings>({
  id: 'hermes-acp',
  displayName: 'Hermes over ACP (hermes acp)',
  configSchema: HermesAcpSettingsSchema,
  defaultConfig: {},
  exampleConfig: { permission_policy: 'sandbox', reasoning_level: null },
  hints: () => HERMES_HINTS,
});
