/**
 * git for promotion: argv only, never a shell, hardened like every `uh` git call (no hooks, no
 * fsmonitor, no replace objects, no system config, no prompts, no `GIT_DIR`-style variables
 * inherited from the caller). Pushes keep the user's global and system config, because git's
 * own credential mechanisms (credential helpers, askpass) live there; they never see a prompt.
 * Every message leaving this module has URL userinfo scrubbed.
 */
import { execFile } from 'node:child_process';
import { UhError } from '../shared/errors.js';
import { redactString, secretEnvValues } from '../shared/redact.js';

export interface GitRun {
  cwd: string;
  env?: Record<string, string | undefined>;
  okCodes?: number[];
  /** Text for stdin (the commit message). */
  input?: string;
  /** A push: keep system config (credential helpers) and the caller's askpass. */
  network?: boolean;
}

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
}

/** Variables that would point git somewhere else than the repository we name. */
const REDIRECTING = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_COMMON_DIR', 'GIT_NAMESPACE', 'GIT_CEILING_DIRECTORIES'];

const HARDENING = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'commit.gpgSign=false'];

/** `https://user:token@host/x` → `https://***@host/x`, anywhere in a text. */
export function scrubUrls(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');
}

/** Scrub URL userinfo and the values of secret-looking environment variables. */
export function scrubText(text: string, env: Readonly<Record<string, string | undefined>> = process.env): string { // env passthrough: the values of secret-looking variables git might echo
  return redactString(scrubUrls(text), secretEnvValues(env));
}

function childEnv(run: GitRun): NodeJS.ProcessEnv {
  // env passthrough: git inherits the promoting process's environment (credential helpers, HOME)
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of REDIRECTING) delete env[name];
  Object.assign(env, { GIT_TERMINAL_PROMPT: '0', GIT_NO_REPLACE_OBJECTS: '1', LC_ALL: 'C' });
  if (!run.network) Object.assign(env, { GIT_CONFIG_NOSYSTEM: '1', GIT_ASKPASS: 'echo' });
  return { ...env, ...run.env } as NodeJS.ProcessEnv;
}

export function runGit(args: readonly string[], run: GitRun): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [...HARDENING, ...args],
      { cwd: run.cwd, env: childEnv(run), maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        if (code === 0 || run.okCodes?.includes(code)) return resolve({ stdout, stderr, code });
        const message = scrubText((stderr || error?.message || '').trim().split('\n').slice(-3).join(' '));
        reject(new UhError('sandbox', `git ${args[0]} failed: ${message}`, { hint: `run git ${args[0]} by hand in ${run.cwd} to see more` }));
      },
    );
    child.stdin?.on('error', () => undefined); // git may exit before reading (it then reports why)
    child.stdin?.end(run.input ?? '');
  });
}
