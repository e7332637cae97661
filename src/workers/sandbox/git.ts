/**
 * The git runner: `git` as a child with argv only, never a shell. A non-zero exit is a typed
 * sandbox error carrying git's own message. Prompts are disabled so a private URL fails fast.
 */
import { execFile } from 'node:child_process';
import { UhError } from '../../shared/errors.js';

export interface GitOptions {
  cwd: string;
  env?: Record<string, string | undefined>;
  /** Allowed exit codes besides 0 (e.g. 1 for `diff --quiet`). */
  okCodes?: number[];
  maxBuffer?: number;
}

const BASE_ENV = {
  GIT_TERMINAL_PROMPT: '0',
  GIT_ASKPASS: 'echo',
  GIT_CONFIG_NOSYSTEM: '1',
  LC_ALL: 'C',
};

export function gitEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  // env passthrough: git (a child) inherits uh's environment (PATH, HOME, credentials helpers).
  return { ...process.env, ...BASE_ENV, ...extra } as NodeJS.ProcessEnv;
}

export function git(args: readonly string[], options: GitOptions): Promise<{ stdout: string; code: number }> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args as string[],
      { cwd: options.cwd, env: gitEnv(options.env), maxBuffer: options.maxBuffer ?? 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        if (code === 0 || options.okCodes?.includes(code)) return resolve({ stdout, code });
        const message = (stderr || error?.message || '').trim().split('\n').slice(-3).join(' ');
        reject(
          new UhError('sandbox', `git ${args[0]} failed: ${message}`, {
            hint: 'check the repository url and ref; run the same git command by hand to see more',
            cause: error,
          }),
        );
      },
    );
  });
}
