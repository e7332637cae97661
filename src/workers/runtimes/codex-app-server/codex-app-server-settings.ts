import { isAbsolute } from 'node:path';
import { z } from 'zod';

/** A `-c key=value` override value, serialised to TOML (JSON string escapes are valid TOML). */
const OverrideValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number(), z.boolean()]))]);

/**
 * `runtime_config` of the `codex-app-server` runtime (`codex app-server` over stdio). Strict: an
 * unknown key is an error. Recovery (`uh mission recover`) must run with the same `codex_home`
 * as the run it recovers: the thread lives there.
 */
export const CodexAppServerSettingsSchema = z.strictObject({
  /** The codex executable: a name on PATH or a path. */
  binary: z.string().min(1).default('codex'),
  /** `CODEX_HOME` for the app server (config.toml, auth, thread rollouts). Unset: codex's `~/.codex`. */
  codex_home: z.string().refine(isAbsolute, 'must be an absolute path').optional(),
  /** `model` of `thread/start` / `thread/resume`; unset: the model of codex's config. */
  model: z.string().min(1).optional(),
  /** Sandbox of the thread for model-generated commands. */
  sandbox: z.enum(['read-only', 'workspace-write', 'danger-full-access']).default('workspace-write'),
  /** `approvalPolicy` of the thread: when codex asks us (server→client requests) before acting. */
  approval_policy: z.enum(['never', 'on-request', 'untrusted']).default('never'),
  /**
   * How we answer approval requests: `decline_outside_workdir` accepts a command whose cwd, or a
   * file change whose paths, lie inside the worktree and declines anything else; `decline_all`
   * declines every request. Requests we do not understand are always declined.
   */
  approvals: z.enum(['decline_outside_workdir', 'decline_all']).default('decline_outside_workdir'),
  /**
   * `resume`: a later operation of the same mission_id continues the mission's thread
   * (`thread/resume`, mapped in `$CODEX_HOME/uh-mission-threads.json`); `new`: always `thread/start`.
   */
  mission_thread: z.enum(['resume', 'new']).default('resume'),
  /** Extra `-c key=value` overrides for `codex app-server` (dotted keys, TOML values). */
  config_overrides: z
    .record(z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'must be a dotted config key'), OverrideValue)
    .default({}),
  /** Extra environment for the app server (provider API keys); values of secret-looking names are secrets. */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), z.string()).default({}),
  /** Deadline of each control request (initialize, thread/*, turn/start, turn/interrupt). */
  request_timeout_ms: z.number().int().positive().max(600_000).default(60_000),
  /** How long the readback may keep seeing the turn `inProgress` after `turn/completed`. */
  readback_timeout_ms: z.number().int().positive().max(600_000).default(15_000),
  /** After `turn/interrupt` (cancel, timeout), how long we wait for the turn to end before closing. */
  interrupt_grace_ms: z.number().int().nonnegative().max(60_000).default(5_000),
  /** After SIGTERM of the app server's process group, how long before SIGKILL. */
  kill_grace_ms: z.number().int().nonnegative().max(60_000).default(2_000),
});
export type CodexAppServerSettings = z.infer<typeof CodexAppServerSettingsSchema>;

export function tomlValue(value: z.infer<typeof OverrideValue>): string {
  if (Array.isArray(value)) return `[${value.map((v) => tomlValue(v)).join(', ')}]`;
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** `codex app-server [-c key=value …]`: stdio transport, never through a shell. */
export function buildAppServerArgv(config: CodexAppServerSettings): string[] {
  const argv = [config.binary, 'app-server'];
  for (const [key, value] of Object.entries(config.config_overrides)) argv.push('-c', `${key}=${tomlValue(value)}`);
  return argv;
}

/** Environment of the app server: the context's, the config's, and CODEX_HOME when configured. */
export function appServerEnv(
  config: CodexAppServerSettings,
  base: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...base, ...config.env };
  if (config.codex_home) env.CODEX_HOME = config.codex_home;
  return env;
}
