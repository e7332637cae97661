import { z } from 'zod';

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

/**
 * `runtime_config` of the `hermes` runtime (`hermes chat -q`). Strict: an unknown key is an error
 * naming its path. Every value becomes an argv element, never shell text.
 */
export const HermesSettingsSchema = z.strictObject({
  /** The program: `hermes` on PATH, or a full path. */
  binary: z.string().min(1).default('hermes'),
  /** `-m <model>`, e.g. `anthropic/claude-sonnet-4`. */
  model: z.string().min(1).optional(),
  /** `--provider <name>` (built-in or from `providers:` in config.yaml). */
  provider: z.string().min(1).optional(),
  /** `-t a,b`: toolsets to enable; absent means the user's configured toolsets. */
  toolsets: z
    .array(z.string().regex(/^[A-Za-z0-9_.:-]+$/, 'must be a toolset name'))
    .min(1)
    .optional(),
  /** `--source <tag>`: `tool` keeps these sessions out of the user's own session lists. */
  source: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'must be a short tag')
    .default('tool'),
  /**
   * `auto` uses `--format stream-json` when `hermes chat --help` offers it, else quiet text
   * (`-Q`); `text` and `stream-json` force one.
   */
  format: z.enum(['auto', 'text', 'stream-json']).default('auto'),
  /**
   * `auto` sends the prompt through stdin (`--query-file -`) when the CLI offers it (no argv size
   * limit, nothing in `ps`), else as `-q <prompt>`; `argv` always uses `-q`.
   */
  prompt_via: z.enum(['auto', 'argv']).default('auto'),
  /** `--yolo`: bypass Hermes' dangerous-command approvals (the sandbox is a throwaway worktree). */
  yolo: z.boolean().default(false),
  /** `--max-turns <n>`: tool-calling iterations per turn. */
  max_turns: z.number().int().positive().max(10_000).optional(),
  /** `--ignore-rules`: no AGENTS.md / memory / preloaded skills. */
  ignore_rules: z.boolean().default(false),
  /** `--ignore-user-config`: built-in defaults instead of `~/.hermes/config.yaml`. */
  ignore_user_config: z.boolean().default(false),
  /** Extra arguments after ours (flags this schema does not model). */
  extra_args: z.array(z.string()).default([]),
  /** Extra environment (`HERMES_HOME`, API keys); secret-looking values are redacted. */
  env: z.record(EnvName, z.string()).default({}),
  /** After SIGTERM on cancel or timeout, how long before SIGKILL. */
  kill_grace_ms: z.number().int().nonnegative().max(60_000).default(3000),
});
export type HermesSettings = z.infer<typeof HermesSettingsSchema>;

/** The oldest Hermes Agent this adapter supports (`hermes chat -q -Q --source`). */
export const HERMES_MIN_VERSION = '0.14.0';
