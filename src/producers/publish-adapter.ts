/**
 * `uh adapter publish <manifest.yaml>`: one manifest for the whole fleet. The file is parsed as
 * strictly as a local manifest (uh.adapter.v0, then its runtime_config by the adapter's own
 * schema, where only keys a mission may still supply can be missing), refused when it holds a
 * secret in clear (Redis never holds one: name an environment variable or a secret file in the
 * runtime's config instead), and stored with its digest, who published it and when
 * (src/shared/queue/adapter-store.ts). Workers and producers without a local copy resolve it
 * from there at each job.
 */
import { userInfo, hostname } from 'node:os';
import type { z } from 'zod';
import { AdapterManifestSchema, type AdapterManifest } from '../shared/contracts/adapter-manifest.js';
import { readDocument } from '../shared/contracts/load-file.js';
import { parseOrThrow } from '../shared/contracts/zod-issues.js';
import { invalidInput } from '../shared/errors.js';
import { AdapterStore, type PublishResult } from '../shared/queue/adapter-store.js';
import { mergeConfig } from '../operation/resolve-runtime.js';
import { RUNTIME_CATALOG } from '../workers/operation-ports.js';
import type { QueueClient } from './queue/queue-client.js';

/** Who publishes: `<user>@<host>` of this process (recorded with the version). */
export function publisherName(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry for this uid (a container's arbitrary uid): keep "unknown"
  }
  return `${user}@${hostname()}`;
}

/** A missing key is one a mission may supply (command's argv); anything else is a mistake in the file. */
function onlyMissing(issues: readonly z.core.$ZodIssue[]): boolean {
  return issues.every((i) => i.code === 'invalid_type' && /received undefined/.test(i.message));
}

export async function checkPublishable(path: string): Promise<AdapterManifest> {
  const manifest = parseOrThrow(AdapterManifestSchema, readDocument(path), path, `${path}: `);
  const adapter = await RUNTIME_CATALOG.load(manifest.runtime_kind);
  if (!adapter)
    throw invalidInput(
      `${path}: runtime_kind "${manifest.runtime_kind}" is not a registered runtime`,
      [],
      `known: ${RUNTIME_CATALOG.ids.join(', ')}`,
    );
  const merged = mergeConfig(adapter.defaultConfig, manifest.runtime_config);
  const parsed = (adapter.configSchema as z.ZodType).safeParse(merged);
  if (!parsed.success && !onlyMissing(parsed.error.issues))
    throw invalidInput(
      `${path}: invalid runtime_config for ${manifest.runtime_kind}`,
      parsed.error.issues.map((i) => `runtime_config.${i.path.join('.')}: ${i.message}`),
      `see docs/runtimes/${adapter.id}.md`,
    );
  const text = JSON.stringify(manifest.runtime_config);
  const secrets = parsed.success ? adapter.secretsOf(parsed.data).filter((s) => s.length > 0 && text.includes(s)) : [];
  if (secrets.length > 0)
    throw invalidInput(
      `${path}: runtime_config holds a secret in clear; a published manifest is stored in Redis`,
      [],
      `read it from the environment or a secret file on the workers (docs/runtimes/${adapter.id}.md), then publish`,
    );
  return manifest;
}

export async function publishAdapter(client: QueueClient, path: string): Promise<PublishResult> {
  const manifest = await checkPublishable(path);
  return new AdapterStore(client.redis, client.config.prefix).publish(manifest, publisherName());
}
