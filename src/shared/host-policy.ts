/**
 * Host policy beats the mission (docs/security.md "Host policy"). A mission may ask to lower its
 * isolation (`sandbox.isolation: off`) or to be handed variables of the worker's environment
 * (`sandbox.env_passthrough`); the fleet's configuration decides whether it gets them:
 *
 *   sandbox.isolation: off      refused under UH_ISOLATION=require, whatever else is set;
 *                               under auto only with UH_ALLOW_MISSION_ISOLATION_OFF=1;
 *                               under off it lowers nothing and is accepted
 *   sandbox.network: host       the host's network (no egress proxy): only with
 *                               UH_ALLOW_MISSION_NETWORK_HOST=1
 *   sandbox.env_passthrough[i]  each entry must be covered by UH_ENV_PASSTHROUGH_ALLOW and must
 *                               not reach a name of NEVER_PASSED (uh's own settings and secrets)
 *
 * Producers (CLI, API) refuse such a mission before anything is written; workers apply the same
 * rules to every job they receive (a job can be written straight into Redis), and the runtime
 * environment drops NEVER_PASSED names whatever the lists say. Pure.
 */
import type { Mission } from './contracts/mission.js';
import { invalidInput, UhError } from './errors.js';

/** Does `name` match one allowlist entry (`NAME` exactly, or `PREFIX_*`)? */
export function nameMatches(name: string, pattern: string): boolean {
  return pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/** What the fleet allows a mission to ask for (the config's `policy`). */
export interface HostPolicy {
  /** `UH_ALLOW_MISSION_ISOLATION_OFF`: a mission's `sandbox.isolation: off` is honoured under `UH_ISOLATION=auto`. */
  allowMissionIsolationOff: boolean;
  /** `UH_ALLOW_MISSION_NETWORK_HOST`: a mission's `sandbox.network: host` (the host's whole network) is honoured. */
  allowMissionNetworkHost?: boolean;
  /** `UH_ENV_PASSTHROUGH_ALLOW`: the names (`NAME`, `PREFIX_*`) a mission may pass through; empty = none. */
  envPassthroughAllow: readonly string[];
}

/** Nothing allowed: the policy of a host whose configuration says nothing. */
export const STRICT_HOST_POLICY: HostPolicy = {
  allowMissionIsolationOff: false,
  allowMissionNetworkHost: false,
  envPassthroughAllow: [],
};

/**
 * Names no mission and no allowlist can pass to an agent: uh's own settings and secrets (the
 * receipt key, the API token, the webhook secret, Redis with its password) and the credentials
 * uh pushes promotions with (GitHub tokens, git's askpass and config-by-environment, the ssh agent).
 */
export const NEVER_PASSED: readonly string[] = [
  'UH_*',
  'REDIS_*',
  'GH_TOKEN',
  'GITHUB_TOKEN',
  'GH_ENTERPRISE_TOKEN',
  'GITHUB_ENTERPRISE_TOKEN',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'GIT_CONFIG_*',
  'SSH_AUTH_SOCK',
];

/** Does a pattern (`NAME` or `PREFIX_*`) match some name that another pattern matches? */
function overlaps(a: string, b: string): boolean {
  const pa = a.endsWith('*') ? a.slice(0, -1) : null;
  const pb = b.endsWith('*') ? b.slice(0, -1) : null;
  if (pa !== null && pb !== null) return pa.startsWith(pb) || pb.startsWith(pa);
  if (pa !== null) return b.startsWith(pa);
  if (pb !== null) return a.startsWith(pb);
  return a === b;
}

/** Does `allow` cover every name `entry` can match? */
function covers(allow: string, entry: string): boolean {
  if (!entry.endsWith('*')) return nameMatches(entry, allow);
  return allow.endsWith('*') && entry.slice(0, -1).startsWith(allow.slice(0, -1));
}

/** May the worker's variable `name` reach the agent: allowed by the host and not one of NEVER_PASSED? */
export function passthroughAllowed(name: string, allow: readonly string[]): boolean {
  return allow.some((p) => nameMatches(name, p)) && !NEVER_PASSED.some((p) => nameMatches(name, p));
}

/**
 * Why the host does not honour the mission's isolation setting, or null: `off` never lowers
 * `UH_ISOLATION=require`, and lowers `auto` only with UH_ALLOW_MISSION_ISOLATION_OFF.
 */
export function isolationRefusal(
  requested: Mission['sandbox']['isolation'],
  isolation: 'auto' | 'require' | 'off',
  allowOff: boolean,
): string | null {
  if (requested !== 'off' || isolation === 'off') return null;
  if (isolation === 'require')
    return 'sandbox.isolation: off is refused: this host requires isolation (UH_ISOLATION=require)';
  return allowOff
    ? null
    : 'sandbox.isolation: off is not allowed on this host (UH_ALLOW_MISSION_ISOLATION_OFF is not set)';
}

/** Why the host does not give the mission its network, or null: `host` only where the fleet allows it. */
export function networkRefusal(requested: Mission['sandbox']['network'], allowHost: boolean): string | null {
  if (requested !== 'host' || allowHost) return null;
  return 'sandbox.network: host is not allowed on this host (UH_ALLOW_MISSION_NETWORK_HOST is not set); use egress with sandbox.egress';
}

function passthroughProblem(entry: string, index: number, allow: readonly string[]): string | null {
  const field = `sandbox.env_passthrough[${index}]`;
  const never = NEVER_PASSED.find((p) => overlaps(entry, p));
  if (never)
    return `${field}: "${entry}" reaches ${never}, which never passes to an agent (uh's own settings and secrets)`;
  if (allow.some((p) => covers(p, entry))) return null;
  const listed = allow.length === 0 ? 'is not set' : `allows ${allow.join(',')}`;
  return `${field}: "${entry}" is not allowed on this host (UH_ENV_PASSTHROUGH_ALLOW ${listed})`;
}

/** One line per setting the host refuses, each naming the field and the config that forbids it. */
export function hostPolicyProblems(
  sandbox: Mission['sandbox'],
  isolation: 'auto' | 'require' | 'off',
  policy: HostPolicy,
): string[] {
  const problems = [
    isolationRefusal(sandbox.isolation, isolation, policy.allowMissionIsolationOff),
    networkRefusal(sandbox.network, policy.allowMissionNetworkHost === true),
  ];
  (sandbox.env_passthrough ?? []).forEach((entry, i) =>
    problems.push(passthroughProblem(entry, i, policy.envPassthroughAllow)),
  );
  return problems.filter((p): p is string => p !== null);
}

/** The operator's next step after a refusal. */
const HINT =
  'drop the setting from the mission, or allow it on the fleet (UH_ALLOW_MISSION_ISOLATION_OFF, UH_ALLOW_MISSION_NETWORK_HOST, UH_ENV_PASSTHROUGH_ALLOW; docs/security.md#host-policy)';

/** The host's side of the policy: its isolation mode and what it allows. */
export interface HostSettings {
  isolation: 'auto' | 'require' | 'off';
  policy: HostPolicy;
  /** `UH_GIT_FAST_PATH`: false, a producer reads refs with git processes too (src/workers/git-path.ts). */
  gitFastPath?: boolean;
}

/** A producer's refusal (exit 2, HTTP 400) before anything is written: one detail per field. */
export function enforceHostPolicy(mission: Mission, host: HostSettings, source = 'mission'): void {
  const problems = hostPolicyProblems(mission.sandbox, host.isolation, host.policy);
  if (problems.length === 0) return;
  throw invalidInput(
    `host policy refuses ${source}: ${problems.length} problem${problems.length === 1 ? '' : 's'}`,
    problems,
    HINT,
  );
}

/** A worker's refusal of a job (it may have been written straight into Redis): the fields in the message, for the receipt. */
export function refuseJobByHostPolicy(mission: Mission, host: HostSettings): void {
  const problems = hostPolicyProblems(mission.sandbox, host.isolation, host.policy);
  if (problems.length === 0) return;
  throw new UhError('invalid_input', `host policy refuses operation ${mission.operation_id}: ${problems.join('; ')}`, {
    hint: HINT,
    details: problems,
  });
}
