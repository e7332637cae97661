/**
 * `uh doctor --redis`'s manifest lines: each adapter manifest this host holds in
 * `<state>/adapters/` against the fleet's published version of the same id (`uh adapter
 * publish`). A host whose copy differs serves another runtime_config than the rest of the fleet:
 * its workers refuse the jobs producers validated against the published one (manifest drift).
 * Informative: never a core finding.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../../shared/errors.js';
import { AdapterStore } from '../../shared/queue/adapter-store.js';
import type { Redis } from 'ioredis';
import { loadManifest } from '../../operation/resolve-runtime.js';
import { RUNTIME_CATALOG } from '../../workers/operation-ports.js';

export interface ManifestFinding {
  what: string;
  ok: boolean;
  detail: string;
  hint?: string;
  core: boolean;
}

export async function manifestDriftFindings(
  redis: Redis,
  prefix: string,
  stateDir: string,
): Promise<ManifestFinding[]> {
  const store = new AdapterStore(redis, prefix);
  const dir = join(stateDir, 'adapters');
  const local = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.yaml')) : [];
  const findings: ManifestFinding[] = [];
  for (const id of local.map((f) => f.slice(0, -5)).sort()) {
    const what = `manifest ${id}`;
    try {
      const published = await store.get(id);
      if (!published) continue;
      const { digest, source } = await loadManifest(stateDir, id, RUNTIME_CATALOG);
      const drift = digest !== published.digest;
      findings.push({
        what,
        ok: !drift,
        detail: drift
          ? `drift: ${source} is ${digest}, the fleet's published one ${published.digest} (by ${published.published_by} at ${published.published_at})`
          : `${source} is the published version ${digest}`,
        ...(drift
          ? {
              hint: `remove ${source} to serve the published one, or publish this one: uh adapter publish ${source}`,
            }
          : {}),
        core: false,
      });
    } catch (error) {
      findings.push({ what, ok: false, detail: errorMessage(error).split('\n')[0] ?? '', core: false });
    }
  }
  return findings;
}
