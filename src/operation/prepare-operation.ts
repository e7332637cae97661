/**
 * Everything a producer does before an operation exists: pick the runtime, resolve the adapter
 * and its config, refuse missing capabilities, resolve the ref to a commit, build the prompt and
 * digest the contract. Shared by `uh mission run` (inline) and `uh mission submit` (queue).
 */
import type { Mission } from '../shared/contracts/mission.js';
import { digestOf, sha256 } from '../shared/digest.js';
import { invalidInput } from '../shared/errors.js';
import { enforceHostPolicy, STRICT_HOST_POLICY, type HostSettings } from '../shared/host-policy.js';
import { buildMissionPrompt } from '../shared/runtime/build-prompt.js';
import { redact } from '../shared/redact.js';
import type { MirrorRef, OperationPorts } from './ports.js';
import { resolveRuntime, type ResolvedRuntime } from './resolve-runtime.js';
import { readHiddenVerifier, type HiddenBundle } from './hidden-verifier.js';

export interface PreparedOperation {
  mission: Mission;
  runtime: ResolvedRuntime;
  mirror: MirrorRef;
  baseCommit: string;
  prompt: string;
  promptDigest: string;
  contractDigest: string;
  /** The hidden verifier's files (`verification_hidden`), read on the producer's host; null without one. */
  hiddenVerifier: HiddenBundle | null;
}

/** The single runtime of a mission, or the one chosen with `--runtime` from its list. */
export function pickRuntime(mission: Mission, chosen?: string): string {
  const runtimes = Array.isArray(mission.runtime) ? mission.runtime : [mission.runtime];
  if (chosen !== undefined) {
    if (Array.isArray(mission.runtime) && !runtimes.includes(chosen)) {
      throw invalidInput(`--runtime ${chosen}: the mission lists ${runtimes.join(', ')}`);
    }
    return chosen;
  }
  if (runtimes.length > 1) {
    throw invalidInput(
      `runtime: the mission lists ${runtimes.length} runtimes (${runtimes.join(', ')})`,
      [],
      'pick one with --runtime, or run them all with: uh batch run',
    );
  }
  return runtimes[0] as string;
}

/**
 * The contract digest: the mission as parsed, the runtime and its public config, the base commit,
 * and the hidden verifier's digest when there is one (other tests are another contract).
 */
export function contractDigestOf(
  mission: Mission,
  runtime: ResolvedRuntime,
  baseCommit: string,
  hidden: HiddenBundle | null = null,
): string {
  return digestOf({
    mission,
    runtime: runtime.runtimeId,
    runtime_kind: runtime.adapter.id,
    runtime_config: runtime.publicConfig,
    base_commit: baseCommit,
    ...(hidden ? { hidden_verifier: hidden.digest } : {}),
  });
}

export interface PrepareOptions {
  stateDir: string;
  cacheDir: string;
  runtime?: string;
  /**
   * This host's isolation mode and policy: a mission asking for more is refused (exit 2) before
   * anything else. Unset: auto, nothing allowed.
   */
  host?: HostSettings;
}

export async function prepareOperation(
  mission: Mission,
  options: PrepareOptions,
  ports: OperationPorts,
): Promise<PreparedOperation> {
  enforceHostPolicy(mission, options.host ?? { isolation: 'auto', policy: STRICT_HOST_POLICY });
  const runtimeId = pickRuntime(mission, options.runtime);
  const runtime = await resolveRuntime(mission, runtimeId, options.stateDir, ports.runtimes);
  const { mirror, commit } = await ports.resolveRef(options.cacheDir, mission.repository.url, mission.repository.ref);
  const prompt = buildMissionPrompt(mission);
  const hiddenVerifier = mission.verification_hidden ? readHiddenVerifier(mission.verification_hidden.path) : null;
  return {
    mission,
    runtime,
    mirror,
    baseCommit: commit,
    prompt,
    promptDigest: sha256(prompt),
    contractDigest: contractDigestOf(mission, runtime, commit, hiddenVerifier),
    hiddenVerifier,
  };
}

/**
 * `--dry-run`: what a run would launch (the runtime, the base commit, the digests, the redacted
 * launch plan), with nothing executed or written.
 */
export async function dryRunView(mission: Mission, options: PrepareOptions, ports: OperationPorts) {
  const prepared = await prepareOperation(mission, options, ports);
  const { adapter, config, publicConfig, runtimeId, secrets } = prepared.runtime;
  const plan = await adapter.prepare({
    config,
    prompt: prepared.prompt,
    workDir: '<sandbox>',
    mission: { missionId: mission.mission_id, operationId: mission.operation_id },
  });
  return {
    operation_id: mission.operation_id,
    runtime: runtimeId,
    runtime_kind: adapter.id,
    base_commit: prepared.baseCommit,
    contract_digest: prepared.contractDigest,
    prompt_digest: prepared.promptDigest,
    runtime_config: publicConfig,
    launch: redact(plan.describe, secrets),
  };
}
