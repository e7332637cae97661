/**
 * Resolve a mission's runtime: the adapter manifest (`<state>/adapters/<id>.yaml`, else the
 * fleet's published one when the catalog has a manifest source, else the built-in default of
 * the registered runtime; its digest travels with the job), the effective runtime_config (manifest, then
 * the mission's overrides, re-parsed by the adapter's strict schema), and capability refusal.
 * No side effects: bad input is refused before anything is written.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { AdapterManifestSchema, type AdapterManifest } from '../shared/contracts/adapter-manifest.js';
import { readDocument } from '../shared/contracts/load-file.js';
import { digestOf } from '../shared/digest.js';
import type { Capability, Mission } from '../shared/contracts/mission.js';
import { formatIssues, parseOrThrow } from '../shared/contracts/zod-issues.js';
import { invalidInput, UhError } from '../shared/errors.js';
import { redact } from '../shared/redact.js';
import type { AnyRuntimeAdapter } from '../shared/runtime/v1/index.js';
import type { RuntimeCatalog } from './ports.js';

export interface ResolvedRuntime {
  /** The manifest id the mission named (`my-codex`). */
  runtimeId: string;
  manifest: AdapterManifest;
  manifestSource: string;
  /** `sha256:…` of the manifest (canonical JSON): a worker refuses a job validated against another. */
  manifestDigest: string;
  /** No manifest file or published one: the runtime's built-in default (code, versioned with uh itself). */
  manifestBuiltIn: boolean;
  adapter: AnyRuntimeAdapter;
  config: unknown;
  /** The config with secrets replaced, safe for digests, receipts and dry runs. */
  publicConfig: unknown;
  secrets: string[];
}

export function manifestPath(stateDir: string, id: string): string {
  return join(stateDir, 'adapters', `${id}.yaml`);
}

export function defaultManifest(adapter: AnyRuntimeAdapter): AdapterManifest {
  return {
    schema_version: 'uh.adapter.v0',
    id: adapter.id,
    name: adapter.displayName,
    version: '0.1.0',
    runtime_kind: adapter.id,
    capabilities: Object.fromEntries(adapter.capabilities.map((c) => [c, true])),
    supported_sandbox_backends: ['git-worktree'],
    input_formats: ['uh.mission.v0'],
    output_formats: ['uh.runtime-result.v0'],
    runtime_config: { ...adapter.defaultConfig },
  };
}

export async function loadManifest(
  stateDir: string,
  id: string,
  runtimes: RuntimeCatalog,
): Promise<{ manifest: AdapterManifest; source: string; digest: string }> {
  const path = manifestPath(stateDir, id);
  const local = existsSync(path) ? { document: readDocument(path), source: path } : null;
  const shared = local ? undefined : await runtimes.manifests?.find(id);
  const found = local ?? (shared ? { document: shared.manifest, source: shared.source } : null);
  if (found) {
    const { source } = found;
    const manifest = parseOrThrow(AdapterManifestSchema, found.document, source, `${source}: `);
    if (manifest.id !== id) throw invalidInput(`${source}: id is "${manifest.id}", expected "${id}" (the file name)`);
    return { manifest, source, digest: digestOf(manifest) };
  }
  const adapter = await runtimes.load(id);
  if (!adapter) {
    throw new UhError('invalid_input', `runtime: unknown runtime "${id}"`, {
      hint: `known runtimes: ${runtimes.ids.join(', ')}; or add a manifest with: uh adapter add ${id} --kind <runtime> (uh adapter publish it for the fleet)`,
    });
  }
  const manifest = defaultManifest(adapter);
  return { manifest, source: `built-in ${id}`, digest: digestOf(manifest) };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Objects merge key by key; anything else (arrays included) is replaced. */
export function mergeConfig(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    out[key] = isPlainObject(prev) && isPlainObject(value) ? mergeConfig(prev, value) : value;
  }
  return out;
}

export async function resolveRuntime(
  mission: Mission,
  runtimeId: string,
  stateDir: string,
  runtimes: RuntimeCatalog,
): Promise<ResolvedRuntime> {
  const { manifest, source, digest } = await loadManifest(stateDir, runtimeId, runtimes);
  const adapter = await runtimes.load(manifest.runtime_kind);
  if (!adapter) {
    throw invalidInput(
      `${source}: runtime_kind "${manifest.runtime_kind}" is not a registered runtime`,
      [],
      `known: ${runtimes.ids.join(', ')}`,
    );
  }
  const overrides = mission.runtime_config_overrides[runtimeId] ?? {};
  const merged = mergeConfig(mergeConfig(adapter.defaultConfig, manifest.runtime_config), overrides);
  const parsed = (adapter.configSchema as z.ZodType).safeParse(merged);
  if (!parsed.success) {
    const details = formatIssues(parsed.error).map((line) => {
      const top = line.split(/[.:[]/)[0] ?? '';
      return top in overrides
        ? `runtime_config_overrides.${runtimeId}.${line}`
        : `runtime_config.${line} (set it in runtime_config_overrides.${runtimeId} or ${source})`;
    });
    throw invalidInput(`invalid runtime_config for ${runtimeId}`, details, `see docs/runtimes/${adapter.id}.md`);
  }
  const config = parsed.data;
  const missing = mission.requires.filter(
    (c: Capability) => !(manifest.capabilities[c] ?? adapter.capabilities.includes(c)),
  );
  if (missing.length > 0) {
    throw new UhError('unsupported_capability', `runtime ${runtimeId} cannot meet requires: ${missing.join(', ')}`, {
      hint: `${runtimeId} has: ${adapter.capabilities.join(', ') || 'none'}; pick another runtime or drop the requirement`,
    });
  }
  const secrets = adapter.secretsOf(config);
  return {
    runtimeId,
    manifest,
    manifestSource: source,
    manifestDigest: digest,
    manifestBuiltIn: source === `built-in ${manifest.id}`,
    adapter,
    config,
    publicConfig: redact(config, secrets),
    secrets,
  };
}
