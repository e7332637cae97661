/**
 * The environment, parsed once (src/shared/config.ts): unset and empty variables take their
 * defaults without any schema; every bad variable is named at once, with its option.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { compileSettings } from '../../src/operation/settings.js';
import { GIT_PROCESSES, gitPathOf, IN_PROCESS_GIT } from '../../src/workers/git-path.js';

describe('loadConfig', () => {
  it('unset or empty: the defaults', () => {
    for (const env of [{}, { UH_QUEUE_LOCK_MS: '', UH_REDIS_PREFIX: '', UH_PRICES: '' }]) {
      const c = loadConfig(env);
      expect(c.queue).toMatchObject({
        redisUrl: null,
        prefix: 'uh',
        lockMs: 120_000,
        stalledIntervalMs: 60_000,
        maxStalledCount: 1,
        heartbeatMs: 2_000,
        webhook: null,
        retryMaxAttempts: null,
        cluster: false,
      });
      expect(c.core).toMatchObject({
        sandboxKeepHours: 24,
        isolation: 'auto',
        logLevel: 'warn',
        workerLogLevel: 'info',
        prices: {},
        allowHttpRepos: false,
      });
      expect(c.gc).toEqual({
        intervalMs: 600_000,
        mirrorIdleDays: 14,
        operationRetentionDays: 30,
        cacheCapBytes: 0,
        minFreeBytes: 1024 ** 3,
      });
    }
  });

  it('set: coerced and checked', () => {
    const c = loadConfig({
      UH_QUEUE_LOCK_MS: '5000',
      UH_REDIS_CLUSTER: 'true',
      REDIS_URL: 'redis://h:1',
      UH_LOG_LEVEL: 'debug',
      UH_PRICES: '{"codex":{"input_per_mtok":1.25,"output_per_mtok":10}}',
    });
    expect(c.queue).toMatchObject({ lockMs: 5000, cluster: true, redisUrl: 'redis://h:1' });
    expect(c.core.logLevel).toBe('debug');
    expect(c.core.prices).toEqual({ codex: { input_per_mtok: 1.25, output_per_mtok: 10 } });
  });

  it('every bad variable is named at once, with the option it sets', () => {
    let error: unknown;
    try {
      loadConfig({ UH_QUEUE_LOCK_MS: '-3', UH_REDIS_PREFIX: 'a:b', UH_LOG_LEVEL: 'loud', UH_CACHE_DIR: '/ok' });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ kind: 'invalid_input', message: 'invalid configuration in the environment' });
    const details = (error as { details: string[] }).details;
    expect(details).toHaveLength(3);
    expect(details[0]).toMatch(/^log level .*\(environment UH_LOG_LEVEL\): /);
    expect(details[1]).toMatch(/^Redis key prefix \(environment UH_REDIS_PREFIX\): letters, digits/);
    expect(details[2]).toMatch(/^job lock duration \(environment UH_QUEUE_LOCK_MS\): /);
  });

  it('host policy: nothing allowed when unset; the allowlist split and checked', () => {
    expect(loadConfig({}).policy).toEqual({
      allowMissionIsolationOff: false,
      allowMissionNetworkHost: false,
      envPassthroughAllow: [],
    });
    const c = loadConfig({ UH_ALLOW_MISSION_ISOLATION_OFF: '1', UH_ENV_PASSTHROUGH_ALLOW: 'OPENAI_API_KEY, TEAM_*,' });
    expect(c.policy).toEqual({
      allowMissionIsolationOff: true,
      allowMissionNetworkHost: false,
      envPassthroughAllow: ['OPENAI_API_KEY', 'TEAM_*'],
    });
    expect(() => loadConfig({ UH_ENV_PASSTHROUGH_ALLOW: 'OK,BAD-NAME' })).toThrow(
      expect.objectContaining({
        details: [expect.stringMatching(/\(environment UH_ENV_PASSTHROUGH_ALLOW\): each entry: a variable name/)],
      }),
    );
  });

  it('a bad price table names UH_PRICES', () => {
    expect(() => loadConfig({ UH_PRICES: '{"codex":{"input_per_mtok":-1,"output_per_mtok":1}}' })).toThrow(
      expect.objectContaining({
        details: [expect.stringMatching(/^price table \(environment UH_PRICES\): codex\.input_per_mtok: /)],
      }),
    );
  });

  it('UH_GIT_FAST_PATH: on unless 0 or false; the settings pick git processes then; a bad value is named', () => {
    const pathOf = (env: Record<string, string>) => gitPathOf(compileSettings(loadConfig(env), { stateDir: '/s' }));
    expect(pathOf({})).toBe(IN_PROCESS_GIT);
    expect(pathOf({ UH_GIT_FAST_PATH: '1' })).toBe(IN_PROCESS_GIT);
    expect(pathOf({ UH_GIT_FAST_PATH: '0' })).toBe(GIT_PROCESSES);
    expect(pathOf({ UH_GIT_FAST_PATH: 'false' })).toBe(GIT_PROCESSES);
    expect(() => loadConfig({ UH_GIT_FAST_PATH: 'off' })).toThrow(
      expect.objectContaining({ details: [expect.stringContaining('(environment UH_GIT_FAST_PATH)')] }),
    );
  });

  it('UH_SANDBOX_BACKEND takes auto, overlay and worktree; anything else is refused naming the variable', () => {
    expect(loadConfig({ UH_SANDBOX_BACKEND: 'auto' }).core.sandboxBackend).toBe('auto');
    expect(loadConfig({ UH_SANDBOX_BACKEND: 'overlay' }).core.sandboxBackend).toBe('overlay');
    expect(loadConfig({}).core.sandboxBackend).toBe('worktree');
    expect(() => loadConfig({ UH_SANDBOX_BACKEND: 'docker' })).toThrow(
      expect.objectContaining({ details: [expect.stringContaining('(environment UH_SANDBOX_BACKEND)')] }),
    );
  });
});
