/**
 * Host settings for a test's in-process run: this process's environment with the test's own
 * cache dir (and so its own receipt key), isolation mode and warm pool, compiled as the CLI does.
 */
import { loadConfig } from '../../src/shared/config.js';
import type { IsolationMode } from '../../src/shared/config.js';
import type { Logger } from '../../src/shared/logger.js';
import { compileSettings, type OperationSettings } from '../../src/operation/settings.js';

export interface TestSettings {
  stateDir: string;
  cacheDir: string;
  isolation?: IsolationMode;
  /** Warm sandboxes per mirror (0: no pool); the configuration's default when unset. */
  poolSize?: number;
  logger?: Logger;
  keepSandbox?: boolean;
  /**
   * Pins `UH_GIT_FAST_PATH` for a test about one implementation's cost; unset: the environment's
   * (`UH_GIT_FAST_PATH=0 npx vitest run` runs every other pipeline with git processes).
   */
  gitFastPath?: boolean;
  /** Pins `UH_SANDBOX_BACKEND` (the warm pool is the worktree backend's); unset: the environment's. */
  sandboxBackend?: 'auto' | 'overlay' | 'worktree';
}

export function testSettings(o: TestSettings): OperationSettings {
  const env: Record<string, string | undefined> = {
    ...process.env,
    UH_CACHE_DIR: o.cacheDir,
    UH_RECEIPT_KEY: undefined,
    UH_RECEIPT_KEY_FILE: undefined,
  };
  if (o.isolation) env.UH_ISOLATION = o.isolation;
  if (o.poolSize !== undefined) env.UH_SANDBOX_POOL_SIZE = String(o.poolSize);
  if (o.sandboxBackend) env.UH_SANDBOX_BACKEND = o.sandboxBackend;
  if (o.gitFastPath !== undefined) env.UH_GIT_FAST_PATH = o.gitFastPath ? '1' : '0';
  const overrides = {
    stateDir: o.stateDir,
    ...(o.logger ? { logger: o.logger } : {}),
    ...(o.keepSandbox ? { keepSandbox: true } : {}),
  };
  return compileSettings(loadConfig(env), overrides);
}
