/**
 * git for promotion: argv only, never a shell, hardened like every `uh` git call by the one
 * shared hardening (`shared/git-hardening.ts`: no hooks, fsmonitor, replace objects, system
 * config, prompts, inherited `GIT_*` variables). Pushes keep the user's global config, because
 * git's own credential mechanisms (credential helpers, askpass) live there; they never see a prompt.
 * Every message leaving this module has URL userinfo scrubbed.
 */
import { execFile } from 'node:child_process';
import { UhError } from '../shared/errors.js';
import { redactString, secretEnvValues } from '../shared/redact.js';
import { GIT_HARDENING_ARGS, hardenedGitEnv } from '../shared/git-hardening.js';

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

/** `https://user:token@host/x` → `https://***@host/x`, anywhere in a text. */
export function scrubUrls(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, '$1***@');
}

/** Scrub URL userinfo and the values of secret-looking environment variables. */
// env passthrough: the values of secret-looking variables git might echo
export function scrubText(text: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  return redactString(scrubUrls(text), secretEnvValues(env));
}

function childEnv(run: GitRun): NodeJS.ProcessEnv {
  // env passthrough: git inherits the promoting process's environment (credential helpers, HOME)
  const env = hardenedGitEnv(process.env, { network: run.network === true });
  return { ...env, ...run.env } as NodeJS.ProcessEnv;
}

export function runGit(args: readonly string[], run: GitRun): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [...GIT_HARDENING_ARGS, ...args],
      { cwd: run.cwd, env: childEnv(run), maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        if (code === 0 || run.okCodes?.includes(code)) return resolve({ stdout, stderr, code });
        const message = scrubText((stderr || error?.message || '').trim().split('\n').slice(-3).join(' '));
        reject(
          new UhError('sandbox', `git ${args[0]} failed: ${message}`, {
            hint: `run git ${args[0]} by hand in ${run.cwd} to see more`,
          }),
        );
      },
    );
    child.stdin?.on('error', () => undefined); // git may exit before reading (it then reports why)
    child.stdin?.end(run.input ?? '');
  });
}
