/**
 * The one hardening of every git process `uh` starts (the sandbox runner `workers/sandbox/git.ts`
 * and the promotion runner `promotion/promotion-git.ts`): config overrides on the command line
 * and a scrubbed environment. Nothing a repository's config, the user's global or system config,
 * or a `GIT_*` variable inherited from the caller says can make git run a command, read another
 * repository, or use replace objects.
 *
 * Decisions:
 * - `protocol.ext.allow=never` (a `ext::` URL runs a command); `file://` and local paths stay
 *   allowed here because the input layer (`shared/contracts/git-inputs.ts`) decides whether a
 *   mission may name a local repository at all.
 * - Network calls (clone, fetch, push) keep the user's GLOBAL config: credential helpers and
 *   `url.*.insteadOf` live there. Everything else runs with `GIT_CONFIG_GLOBAL=/dev/null`.
 *   System config is never read.
 * - Inherited `GIT_*` variables are dropped (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`,
 *   `GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`, `GIT_EXEC_PATH`, `GIT_TRACE*`…) except the few
 *   that choose how to reach a remote (`GIT_SSH*`, `GIT_SSL_CA*`, `GIT_PROXY_SSL_*`, and for
 *   network calls the caller's `GIT_ASKPASS`).
 */
import { UhError } from './errors.js';

/** `-c` overrides put before every git subcommand (command-line config wins over every file). */
export const GIT_HARDENING_ARGS: readonly string[] = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.untrackedCache=false',
  '-c',
  'core.splitIndex=false',
  '-c',
  'core.sharedRepository=false',
  '-c',
  'core.attributesFile=/dev/null',
  '-c',
  'core.excludesFile=/dev/null',
  '-c',
  'protocol.ext.allow=never',
  '-c',
  'commit.gpgSign=false',
  '-c',
  'tag.gpgSign=false',
  '-c',
  'submodule.recurse=false',
  '-c',
  'fetch.recurseSubmodules=false',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
  '-c',
  'advice.detachedHead=false',
];

/** Inherited variables kept: how to reach a remote, never where a repository is. */
const KEPT_GIT_VARIABLES = new Set([
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_SSH_VARIANT',
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'GIT_PROXY_SSL_CAINFO',
]);

export interface GitEnvOptions {
  /** A clone, fetch or push: keep the user's global config (credential helpers). */
  network?: boolean;
}

/** The environment of a hardened git process, from the caller's (inherited) environment. Pure. */
export function hardenedGitEnv(
  inherited: Readonly<Record<string, string | undefined>>,
  options: GitEnvOptions = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(inherited)) {
    if (value === undefined) continue;
    const kept = KEPT_GIT_VARIABLES.has(name) || (options.network === true && name === 'GIT_ASKPASS');
    if (name.startsWith('GIT_') && !kept) continue;
    env[name] = value;
  }
  Object.assign(env, {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    LC_ALL: 'C',
  });
  if (!options.network) Object.assign(env, { GIT_CONFIG_GLOBAL: '/dev/null', GIT_ASKPASS: 'echo' });
  return env;
}

/** A URL or ref that git could read as an option. The input layer refuses them; this is the last guard. */
export function assertNotOption(value: string, what: string): void {
  if (value.startsWith('-') || /^ext::/i.test(value)) {
    throw new UhError('invalid_input', `${what}: "${value.slice(0, 80)}" looks like a git option or an ext:: URL`, {
      hint: `give a plain ${what}`,
    });
  }
}
