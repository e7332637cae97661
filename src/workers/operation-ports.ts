/**
 * The real ports of the operation layer: the registered runtimes and the mirror cache. Producers
 * import this one module to prepare an operation (an allowed entry point, .dependency-cruiser.cjs).
 */
import type { ManifestSource } from '../shared/contracts/adapter-manifest.js';
import type { OperationPorts, RuntimeCatalog } from '../operation/ports.js';
import type { OperationSettings } from '../operation/settings.js';
import { gitPathOf } from './git-path.js';
import { loadRuntimeAdapter, RUNTIME_IDS } from './runtimes/registry.js';
import { resolveInMirror } from './sandbox/mirror-cache.js';

/** The registered runtimes, each adapter loaded when first asked for. */
export const RUNTIME_CATALOG: RuntimeCatalog = { ids: RUNTIME_IDS, load: loadRuntimeAdapter };

/** With the git fast path (a local ref read from its files when uh is sure of git's answer). */
export const OPERATION_PORTS: OperationPorts = { runtimes: RUNTIME_CATALOG, resolveRef: resolveInMirror };

/** The registered runtimes, with the manifests this host does not hold looked up in `manifests` (published ones). */
export function runtimeCatalog(manifests?: ManifestSource): RuntimeCatalog {
  return manifests ? { ...RUNTIME_CATALOG, manifests } : RUNTIME_CATALOG;
}

/**
 * The ports under this host's settings: `UH_GIT_FAST_PATH=0` resolves every local ref with git;
 * `manifests`: the fleet's published adapter manifests (a queue producer's Redis).
 */
export function operationPorts(
  settings: Pick<OperationSettings, 'gitFastPath'>,
  manifests?: ManifestSource,
): OperationPorts {
  if (settings.gitFastPath)
    return manifests ? { ...OPERATION_PORTS, runtimes: runtimeCatalog(manifests) } : OPERATION_PORTS;
  const git = gitPathOf(settings);
  return {
    runtimes: runtimeCatalog(manifests),
    resolveRef: (cacheDir, url, ref) => resolveInMirror(cacheDir, url, ref, {}, git),
  };
}
