import { z } from 'zod';

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

/** What differs between the `pi` and `oh-my-pi` registrations. */
export interface PiDefaults {
  binary: string;
  prompt_via: 'stdin' | 'argv';
}

/**
 * `runtime_config` of the `pi` and `oh-my-pi` runtimes (one shape, per-runtime defaults). Strict:
 * an unknown key is an error naming its path. Every value becomes an argv element, never shell text.
 */
export const piSettingsSchema = (defaults: PiDefaults) =>
  z.strictObject({
    /** The program: `pi` / `omp` on PATH, or a full path. */
    binary: z.string().min(1).default(defaults.binary),
    /** `--provider <name>`: a built-in provider or one from `~/.pi/agent/models.json`. */
    provider: z.string().min(1).optional(),
    /** `--model <pattern>` (also `provider/id`, optional `:<thinking>`). */
    model: z.string().min(1).optional(),
    /** `--thinking <level>`. */
    thinking: z.enum(['off', 'minimal', 'low', 'medium', 'high', 'xhigh']).optional(),
    /** `--tools a,b,c`: allowlist of tool names; absent means pi's defaults (read, bash, edit, write). */
    tools: z
      .array(z.string().regex(/^[A-Za-z0-9_.:-]+$/, 'must be a tool name'))
      .min(1)
      .optional(),
    /** `false` adds `--no-extensions` (no discovery of user extensions). */
    extensions: z.boolean().default(true),
    /** `false` adds `--no-skills`. */
    skills: z.boolean().default(true),
    /** `false` adds `--no-context-files` (no AGENTS.md / CLAUDE.md loading). */
    context_files: z.boolean().default(true),
    /** `--append-system-prompt <text>`. */
    append_system_prompt: z.string().min(1).optional(),
    /**
     * How the prompt reaches the CLI: `stdin` (pi reads a piped stdin as the first message; no argv
     * size limit, no `@file`/flag parsing of the prompt) or `argv` (the last positional argument).
     */
    prompt_via: z.enum(['stdin', 'argv']).default(defaults.prompt_via),
    /** Sets `PI_OFFLINE=1`: no startup network operations (update checks, telemetry). */
    offline: z.boolean().default(true),
    /** Extra arguments placed before the prompt (for flags this schema does not model). */
    extra_args: z.array(z.string()).default([]),
    /** Extra environment (API keys, `PI_CODING_AGENT_DIR`); secret-looking values are redacted. */
    env: z.record(EnvName, z.string()).default({}),
    /** After SIGTERM on cancel or timeout, how long before SIGKILL. */
    kill_grace_ms: z.number().int().nonnegative().max(60_000).default(3000),
  });
export type PiSettings = z.infer<ReturnType<typeof piSettingsSchema>>;
