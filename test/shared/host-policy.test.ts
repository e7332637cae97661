/**
 * The host policy's rules as tables (src/shared/host-policy.ts): which passthrough entries a host
 * allows, which never pass, when a mission's `isolation: off` is honoured; and the runtime
 * environment, which drops uh's own names whatever the lists say.
 */
import { describe, expect, it } from 'vitest';
import { MissionSchema } from '../../src/shared/contracts/mission.js';
import { hostPolicyProblems, type HostPolicy } from '../../src/shared/host-policy.js';
import { buildRuntimeEnv } from '../../src/shared/process/runtime-env.js';
import { hostSecretValues } from '../../src/shared/redact.js';

const sandbox = (patch: Record<string, unknown>) =>
  MissionSchema.parse({
    schema_version: 'uh.mission.v0',
    mission_id: 'm',
    operation_id: 'op-1',
    title: 't',
    objective: 'o',
    repository: { url: 'https://example.com/r.git' },
    runtime: 'command',
    sandbox: patch,
  }).sandbox;

const policy = (allow: string[], allowOff = false): HostPolicy => ({
  allowMissionIsolationOff: allowOff,
  envPassthroughAllow: allow,
});

describe('env_passthrough against UH_ENV_PASSTHROUGH_ALLOW', () => {
  it.each([
    // entry, allowlist, refused with (null: allowed)
    ['OPENAI_API_KEY', ['OPENAI_API_KEY'], null],
    ['TEAM_A_KEY', ['TEAM_*'], null],
    ['TEAM_A*', ['TEAM_*'], null],
    ['TEA*', ['TEAM_*'], 'is not allowed on this host (UH_ENV_PASSTHROUGH_ALLOW allows TEAM_*)'],
    ['TEAM_*', ['TEAM_A_KEY'], 'is not allowed on this host'],
    ['OPENAI_API_KEY', [], 'UH_ENV_PASSTHROUGH_ALLOW is not set'],
    ['UH_*', ['UH_*'], 'reaches UH_*, which never passes'],
    ['U*', ['U*'], 'reaches UH_*'],
    ['UH_RECEIPT_KEY', ['UH_RECEIPT_KEY'], 'reaches UH_*'],
    ['REDIS_URL', ['REDIS_URL'], 'reaches REDIS_*'],
    ['GH_TOKEN', ['GH_*'], 'reaches GH_TOKEN'],
    ['G*', ['G*'], 'reaches GH_TOKEN'],
    ['GIT_CONFIG_VALUE_0', ['GIT_*'], 'reaches GIT_CONFIG_*'],
  ] as const)('%s with %j', (entry, allow, refusal) => {
    const problems = hostPolicyProblems(sandbox({ env_passthrough: [entry] }), 'auto', policy([...allow]));
    if (refusal === null) {
      expect(problems).toEqual([]);
    } else {
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^sandbox\.env_passthrough\[0\]: /);
      expect(problems[0]).toContain(refusal);
    }
  });
});

describe('sandbox.isolation: off against UH_ISOLATION and UH_ALLOW_MISSION_ISOLATION_OFF', () => {
  it.each([
    ['require', true, 'this host requires isolation (UH_ISOLATION=require)'],
    ['require', false, 'this host requires isolation (UH_ISOLATION=require)'],
    ['auto', false, 'UH_ALLOW_MISSION_ISOLATION_OFF is not set'],
    ['auto', true, null],
    ['off', false, null],
  ] as const)('UH_ISOLATION=%s, allowed %s', (mode, allowOff, refusal) => {
    const problems = hostPolicyProblems(sandbox({ isolation: 'off' }), mode, policy([], allowOff));
    expect(problems).toEqual(refusal === null ? [] : [expect.stringContaining(refusal)]);
  });
});

describe('the runtime environment', () => {
  const worker = {
    PATH: '/usr/bin',
    UH_RECEIPT_KEY: 'k'.repeat(40),
    REDIS_URL: 'redis://:pw-secret-1@h:6379',
    OMP_X: '1',
    TEAM_A: 'a',
    TEAM_B: 'b',
    GH_TOKEN: 'ghp_x',
  };

  it("passes what the mission names and the host allows; never uh's own names, even an adapter's", () => {
    const env = buildRuntimeEnv({
      worker,
      adapterNames: ['OMP_*', 'UH_*', 'GH_TOKEN'],
      passthrough: ['TEAM_*', 'UH_*', 'REDIS_*'],
      passthroughAllow: ['TEAM_A', '*'],
      missionEnv: {},
    });
    expect(env.runtime).toEqual({ PATH: '/usr/bin', OMP_X: '1', TEAM_A: 'a', TEAM_B: 'b' });
    const narrow = buildRuntimeEnv({
      worker,
      adapterNames: [],
      passthrough: ['TEAM_*'],
      passthroughAllow: ['TEAM_A'],
      missionEnv: {},
    });
    expect(narrow.runtime).toEqual({ PATH: '/usr/bin', TEAM_A: 'a' });
  });

  it("knows the worker's own secrets: the receipt key, secret-looking UH_* values, Redis passwords", () => {
    const secrets = hostSecretValues({
      ...worker,
      UH_API_TOKEN: 'api-token-123456',
      UH_CACHE_DIR: '/var/cache/uh',
      AUTH_MODE: 'password',
    });
    expect(secrets.sort()).toEqual(['api-token-123456', 'k'.repeat(40), 'pw-secret-1'].sort());
  });
});
