import { z } from 'zod';
import { codexCommonShape, overrideArgs } from '../codex-shared/codex-common-settings.js';

/** `runtime_config` of the `codex` runtime (`codex exec --json`). Strict: an unknown key is an error. */
export const CodexSettingsSchema = z.strictObject({
  ...codexCommonShape,
  /** `-p <profile>`: a profile layered from `$CODEX_HOME`. */
  profile: z.string().min(1).optional(),
  /** `--ephemeral`: no session files persisted under CODEX_HOME (no resume later). */
  ephemeral: z.boolean().default(true),
  /**
   * How long codex may wait for an unreachable model endpoint ("Reconnecting... waiting for
   * network", which it repeats forever) before the run is stopped as blocked `unreachable`.
   * 0 stops at the first such notice.
   */
  network_wait_ms: z.number().int().nonnegative().max(3_600_000).default(60_000),
});
export type CodexSettings = z.infer<typeof CodexSettingsSchema>;

/**
 * The argv of one run, never through a shell:
 * `codex exec --json --output-last-message <file> --cd <dir> --sandbox <mode> --skip-git-repo-check
 * [--ephemeral] [-m model] [-p profile] [-c key=value …] -- <prompt>`.
 */
export function buildCodexArgv(
  config: CodexSettings,
  workDir: string,
  lastMessageFile: string,
  prompt: string,
): string[] {
  const argv = [config.binary, 'exec', '--json', '--output-last-message', lastMessageFile, '--cd', workDir];
  argv.push('--sandbox', config.sandbox, '--skip-git-repo-check');
  if (config.ephemeral) argv.push('--ephemeral');
  if (config.model) argv.push('-m', config.model);
  if (config.profile) argv.push('-p', config.profile);
  argv.push(...overrideArgs(config));
  argv.push('--', prompt);
  return argv;
}
