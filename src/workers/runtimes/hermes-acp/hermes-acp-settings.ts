import { z } from 'zod';
import { acpSettingsShape } from '../acp/acp-settings.js';

/**
 * `runtime_config` of `hermes-acp`: the ACP fields with Hermes defaults (`hermes acp`, auth right
 * after `initialize`, a 500 ms settle after `session/load` for Hermes versions that replay history
 * after the reply) plus the opt-in reasoning level.
 */
export const HermesAcpSettingsSchema = z.strictObject({
  ...acpSettingsShape({ command: ['hermes', 'acp'], authMode: 'upfront', loadSettleMs: 500 }),
  /**
   * Opt-in, off by default: send `/reasoning <level>` as its own turn before the prompt (only when
   * the level changed on this child). A separate turn, never a prefix, so a Hermes version that
   * does not treat it as a slash command cannot swallow the mission prompt with it.
   */
  reasoning_level: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']).nullable().default(null),
});
export type HermesAcpSettings = z.infer<typeof HermesAcpSettingsSchema>;
