/**
 * Configuration from the environment, parsed once with zod. Errors name both the option and
 * the environment variable.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { invalidInput } from './errors.js';

const EnvSchema = z.object({
  UH_STATE_DIR: z.string().min(1).optional(),
  UH_CACHE_DIR: z.string().min(1).optional(),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  UH_LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('warn'),
  UH_SANDBOX_KEEP_HOURS: z.coerce.number().nonnegative().default(24),
  UH_KEEP_SANDBOX: z.enum(['0', '1', 'true', 'false']).optional(),
  XDG_CACHE_HOME: z.string().optional(),
  UH_ALLOW_LOCAL_REPOS: z.enum(['0', '1', 'true', 'false']).optional(),
  UH_ALLOW_HTTP_REPOS: z.enum(['0', '1', 'true', 'false']).optional(),
});

const flag = (value: string | undefined): boolean | undefined => (value === undefined ? undefined : value === '1' || value === 'true');

const OPTION_OF: Record<string, string> = {
  UH_STATE_DIR: '--state-dir',
  UH_CACHE_DIR: 'cache dir',
  REDIS_URL: '--redis',
  UH_LOG_LEVEL: 'log level',
  UH_SANDBOX_KEEP_HOURS: 'sandbox retention (hours)',
  UH_KEEP_SANDBOX: 'keep every sandbox',
  UH_ALLOW_LOCAL_REPOS: 'allow local repository paths',
  UH_ALLOW_HTTP_REPOS: 'allow http:// repository URLs',
};

export interface UhConfig {
  stateDir: string | undefined;
  cacheDir: string;
  redisUrl: string;
  logLevel: string;
  sandboxKeepHours: number;
  keepSandbox: boolean;
  /** Local paths and file:// as repository.url; unset: allowed on the CLI, refused by the HTTP API. */
  allowLocalRepos: boolean | undefined;
  /** Plain http:// as repository.url (default off). */
  allowHttpRepos: boolean;
}

export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): UhConfig {
  const result = EnvSchema.safeParse(env);
  if (!result.success) {
    const details = result.error.issues.map((i) => {
      const key = String(i.path[0]);
      return `${OPTION_OF[key] ?? key} (environment ${key}): ${i.message}`;
    });
    throw invalidInput('invalid environment', details);
  }
  const e = result.data;
  return {
    stateDir: e.UH_STATE_DIR,
    cacheDir: e.UH_CACHE_DIR ?? join(e.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'uh'),
    redisUrl: e.REDIS_URL,
    logLevel: e.UH_LOG_LEVEL,
    sandboxKeepHours: e.UH_SANDBOX_KEEP_HOURS,
    keepSandbox: e.UH_KEEP_SANDBOX === '1' || e.UH_KEEP_SANDBOX === 'true',
    allowLocalRepos: flag(e.UH_ALLOW_LOCAL_REPOS),
    allowHttpRepos: flag(e.UH_ALLOW_HTTP_REPOS) ?? false,
  };
}
