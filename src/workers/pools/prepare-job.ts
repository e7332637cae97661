/**
 * A job's operation, prepared on the worker host: the mission re-parsed strictly, the runtime
 * resolved from this host's manifests, the producer's base commit fetched into this host's
 * mirror. The contract digest is recomputed: a worker whose manifest resolves another
 * runtime_config than the producer's refuses the job rather than run a different contract.
 * The manifest's digest too (`manifest_digest`, when the job carries one): a host whose copy of
 * the manifest differs from the one the producer validated against (a stale local file, another
 * published version) refuses the job, naming both, instead of serving the runtime it has.
 * This host's policy applies to the job as received (it may have been written straight into
 * Redis, past every producer): a mission asking for more than the host allows is refused first.
 */
import { MissionSchema } from '../../shared/contracts/mission.js';
import { parseOrThrow } from '../../shared/contracts/zod-issues.js';
import { sha256 } from '../../shared/digest.js';
import { UhError } from '../../shared/errors.js';
import { refuseJobByHostPolicy, type HostSettings } from '../../shared/host-policy.js';
import type { OperationJob } from '../../shared/queue/operation-store.js';
import { buildMissionPrompt } from '../../shared/runtime/build-prompt.js';
import { contractDigestOf, type PreparedOperation } from '../../operation/prepare-operation.js';
import { resolveRuntime } from '../../operation/resolve-runtime.js';
import { checkHiddenBundle } from '../../operation/hidden-verifier.js';
import type { RuntimeCatalog } from '../../operation/ports.js';
import type { ResolvedRuntime } from '../../operation/resolve-runtime.js';
import { RUNTIME_CATALOG } from '../operation-ports.js';
import { resolveInMirror } from '../sandbox/mirror-cache.js';

type PrepareJobOptions = {
  stateDir: string;
  cacheDir: string;
  signal?: AbortSignal;
  host: HostSettings;
  /** The runtimes with the fleet's published manifests (default: the registered runtimes, local manifests only). */
  runtimes?: RuntimeCatalog;
};

/** The job was validated against another manifest than the one this host resolves: refuse, naming both. */
function refuseManifestDrift(job: OperationJob, runtime: ResolvedRuntime): void {
  if (!job.manifest_digest || job.manifest_digest === runtime.manifestDigest) return;
  throw new UhError(
    'conflict',
    `manifest drift: runtime ${job.runtime} on this worker is ${runtime.manifestSource} (${runtime.manifestDigest}), but ${job.operation_id} was validated against ${job.manifest_digest}`,
    {
      hint: `make every host serve one manifest: uh adapter publish it and remove stale copies (uh doctor --redis names them), then submit under a new operation_id`,
    },
  );
}

export async function prepareJob(job: OperationJob, options: PrepareJobOptions): Promise<PreparedOperation> {
  const mission = parseOrThrow(MissionSchema, job.mission, 'job.mission');
  refuseJobByHostPolicy(mission, options.host);
  const runtime = await resolveRuntime(mission, job.runtime, options.stateDir, options.runtimes ?? RUNTIME_CATALOG);
  refuseManifestDrift(job, runtime);
  const { mirror, commit } = await resolveInMirror(
    options.cacheDir,
    mission.repository.url,
    job.base_commit,
    options.signal ? { signal: options.signal } : {},
  );
  const hiddenVerifier = job.hidden_verifier ? checkHiddenBundle(job.hidden_verifier) : null;
  const contractDigest = contractDigestOf(mission, runtime, commit, hiddenVerifier);
  if (contractDigest !== job.contract_digest) {
    throw new UhError(
      'conflict',
      `worker resolves another contract for ${job.operation_id} (runtime config or base commit differ)`,
      {
        hint: `align ${runtime.manifestSource} on this worker with the producer's, then submit under a new operation_id`,
      },
    );
  }
  const prompt = buildMissionPrompt(mission);
  return {
    mission,
    runtime,
    mirror,
    baseCommit: commit,
    prompt,
    promptDigest: sha256(prompt),
    contractDigest,
    hiddenVerifier,
  };
}
