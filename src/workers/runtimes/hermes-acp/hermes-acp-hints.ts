/** Hermes's operator hints for the ACP classifier (`classifyAcp(facts, HERMES_HINTS)`). */
import type { AcpHints } from '../acp/classify-acp.js';

/** Operator hints for Hermes. */
export const HERMES_HINTS: AcpHints = {
  install:
    'install Hermes (NousResearch hermes-agent) so "hermes" is on PATH, or set runtime_config.command; check with "uh adapter check hermes-acp"',
  auth: 'run "hermes setup" (or "hermes login") on this worker, or put a provider key in ~/.hermes/.env or runtime_config.env',
};
