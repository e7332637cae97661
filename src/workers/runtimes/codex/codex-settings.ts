import { isAbsolute } from 'node:path';
import { z } from 'zod';

/** A `-c key=value` override value; serialised to TOML by `tomlValue`. */
const OverrideValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number(), z.boolean()]))]);

/** `runtime_config` of the `codex` runtime (`codex exec --json`). Strict: an unknown key is an error. */
export const CodexSettingsSchema = z.strictObject({
  /** The codex executable: a name on PATH or a path (the npm package's `bin/codex.js` works too). */
  binary: z.string().min(1).default('codex'),
  /** `CODEX_HOME` for the child (config.toml, auth). Unset: codex's default `~/.codex`. */
  codex_home: z.string().refine(isAbsolute, 'must be an absolute path').optional(),
  /** `-m <model>`; unset: the model of codex's config. */
  model: z.string().min(1).optional(),
  /** `-p <profile>`: a profile layered from `$CODEX_HOME`. */
  profile: z.string().min(1).optional(),
  /** `--sandbox <mode>` for model-generated shell commands. */
  sandbox: z.enum(['read-only', 'workspace-write', 'danger-full-access']).default('workspace-write'),
  /** Extra `-c key=value` overrides (dotted keys, values serialised as TOML). */
  config_overrides: z
    .record(z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'must be a dotted config key'), OverrideValue)
    .default({}),
  /** `--ephemeral`: no session files persisted under CODEX_HOME (no resume later). */
  ephemeral: z.boolean().default(true),
  /** Extra environment for the child (provider API keys); values of secret-looking names are secrets. */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), z.string()).default({}),
  /**
   * How long codex may wait for an unreachable model endpoint ("Reconnecting... waiting for
   * network", which it repeats forever) before the run is stopped as blocked `unreachable`.
   * 0 stops at the first such notice.
   */
  network_wait_ms: z.number().int().nonnegative().max(3_600_000).default(60_000),
  /** After SIGTERM on cancel or timeout, how long before SIGKILL. */
  kill_grace_ms: z.number().int().nonnegative().max(60_000).default(2000),
});
export type CodexSettings = z.infer<typeof CodexSettingsSchema>;

/** A JSON-ish value as TOML (`"text"`, `3`, `true`, `["a", 1]`); JSON string escapes are valid TOML. */
export function tomlValue(value: z.infer<typeof OverrideValue>): string {
  if (Array.isArray(value)) return `[${value.map((v) => tomlValue(v)).join(', ')}]`;
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/**
 * The argv of one run, never through a shell:
 * `codex exec --json --output-last-message <file> --cd <dir> --sandbox <mode> --skip-git-repo-check
 * [--ephemeral] [-m model] [-p profile] [-c key=value …] -- <prompt>`.
 */
export function buildCodexArgv(config: CodexSettings, workDir: string, lastMessageFile: string, prompt: string): string[] {
  const argv = [config.binary, 'exec', '--json', '--output-last-message', lastMessageFile, '--cd', workDir];
  argv.push('--sandbox', config.sandbox, '--skip-git-repo-check');
  if (config.ephemeral) argv.push('--ephemeral');
  if (config.model) argv.push('-m', config.model);
  if (config.profile) argv.push('-p', config.profile);
  for (const [key, value] of Object.entries(config.config_overrides)) argv.push('-c', `${key}=${tomlValue(value)}`);
  argv.push('--', prompt);
  return argv;
}
