/**
 * Which of a runtime's configured environment variables name its agent's state: a home or a
 * config, data, cache or state directory (`HOME`, `XDG_*_HOME`, `CODEX_HOME`, `GEMINI_CLI_HOME`,
 * `CLAUDE_CONFIG_DIR`, `OPENCODE_CONFIG_DIR`, `PI_CODING_AGENT_DIR`, …) with an absolute path as
 * its value. A directory (or a path that does not exist yet) is state the agent writes; an existing
 * file (`OPENCODE_CONFIG=/etc/uh/opencode.json`) is only read. Used by the adapters' `isolation()`.
 */
import { statSync } from 'node:fs';
import { isAbsolute } from 'node:path';

const STATE_NAME = /^(HOME|XDG_[A-Z]+_HOME|[A-Z][A-Z0-9_]*_(HOME|DIR)|GEMINI_[A-Z0-9_]+|OPENCODE_CONFIG[A-Z_]*)$/;

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

export function agentStateEnv(env: Readonly<Record<string, string>>): {
  state: Record<string, string>;
  readable: string[];
} {
  const state: Record<string, string> = {};
  const readable: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!STATE_NAME.test(name) || !isAbsolute(value) || value === '/') continue;
    if (isFile(value)) readable.push(value);
    else state[name] = value.replace(/\/+$/, '');
  }
  return { state, readable };
}
