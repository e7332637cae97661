import { z } from 'zod';
import { codexChildEnv, codexCommonShape, overrideArgs } from '../codex-shared/codex-common-settings.js';

/**
 * `runtime_config` of the `codex-app-server` runtime (`codex app-server` over stdio). Strict: an
 * unknown key is an error. Recovery (`uh mission recover`) must run with the same `codex_home`
 * as the run it recovers: the thread lives there.
 */
export const CodexAppServerSettingsSchema = z.strictObject({
  ...codexCommonShape,
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
  /** Deadline of each control request (initialize, thread/*, turn/start, turn/interrupt). */
  request_timeout_ms: z.number().int().positive().max(600_000).default(60_000),
  /** How long the readback may keep seeing the turn `inProgress` after `turn/completed`. */
  readback_timeout_ms: z.number().int().positive().max(600_000).default(15_000),
  /** After `turn/interrupt` (cancel, timeout), how long we wait for the turn to end before closing. */
  interrupt_grace_ms: z.number().int().nonnegative().max(60_000).default(5_000),
});
export type CodexAppServerSettings = z.infer<typeof CodexAppServerSettingsSchema>;

/** `codex app-server [-c key=value …]`: stdio transport, never through a shell. */
export function buildAppServerArgv(config: CodexAppServerSettings): string[] {
  const argv = [config.binary, 'app-server'];
  argv.push(...overrideArgs(config));
  return argv;
}

/** Environment of the app server: the context's, the config's, and CODEX_HOME when configured. */
export function appServerEnv(
  config: CodexAppServerSettings,
  base: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  return codexChildEnv(config, base);
}
