import { z } from 'zod';

/** `runtime_config` of the `command` runtime: any program run as the "agent". */
export const CommandSettingsSchema = z.strictObject({
  /** The program and its arguments; never a shell string. */
  argv: z.array(z.string().min(1)).min(1, 'argv needs at least the program'),
  /** Extra environment for the child (values are treated as secrets when their names look secret). */
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), z.string())
    .default({}),
  /** `stdin` (default) pipes the prompt; `file` writes it to a file named by `UH_PROMPT_FILE`. */
  prompt_via: z.enum(['stdin', 'file']).default('stdin'),
  /** After SIGTERM on cancel or timeout, how long before SIGKILL. */
  kill_grace_ms: z.number().int().nonnegative().max(60_000).default(2000),
});
export type CommandSettings = z.infer<typeof CommandSettingsSchema>;
