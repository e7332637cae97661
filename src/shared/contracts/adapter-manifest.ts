import { z } from 'zod';
import { IdSchema } from './ids.js';
import { CapabilitySchema } from './mission.js';

/**
 * `uh.adapter.v0`: `.harness/adapters/<id>.yaml`. `runtime_kind` names the registered adapter
 * implementation; `id` may differ (`my-codex` of kind `codex`). `runtime_config` is re-parsed by
 * the adapter's own strict schema.
 */
export const AdapterManifestSchema = z.lazy(() =>
  z.strictObject({
    schema_version: z.literal('uh.adapter.v0'),
    id: IdSchema,
    name: z.string().min(1),
    version: z.string().min(1).default('0.1.0'),
    runtime_kind: IdSchema,
    capabilities: z.partialRecord(CapabilitySchema, z.boolean()).default({}),
    supported_sandbox_backends: z.array(z.literal('git-worktree')).default(['git-worktree']),
    input_formats: z.array(z.literal('uh.mission.v0')).default(['uh.mission.v0']),
    output_formats: z.array(z.literal('uh.runtime-result.v0')).default(['uh.runtime-result.v0']),
    runtime_config: z.record(z.string(), z.unknown()).default({}),
  }),
);
export type AdapterManifest = z.infer<typeof AdapterManifestSchema>;

/** A manifest served from outside the host's state dir (published in Redis by `uh adapter publish`). */
export interface SharedManifest {
  /** The manifest document as stored (re-parsed strictly by whoever resolves it). */
  manifest: unknown;
  /** `sha256:…` of the manifest's canonical JSON, checked against the stored text before it is returned. */
  digest: string;
  /** Where it came from, for messages: `redis {uh}/adapters my-cmd (sha256:…, by alice@ci-1 at …)`. */
  source: string;
}

/** Where manifests that are not in `<state>/adapters/` are looked up (a fleet's shared registry). */
export interface ManifestSource {
  find(id: string): Promise<SharedManifest | undefined>;
}
