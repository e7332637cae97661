/**
 * The real ports of the operation layer: the registered runtimes and the mirror cache. Producers
 * import this one module to prepare an operation (an allowed entry point, .dependency-cruiser.cjs).
 */
import type { OperationPorts, RuntimeCatalog } from '../operation/ports.js';
import { loadRuntimeAdapter, RUNTIME_IDS } from './runtimes/registry.js';
import { resolveInMirror } from './sandbox/mirror-cache.js';

/** The registered runtimes, each adapter loaded when first asked for. */
export const RUNTIME_CATALOG: RuntimeCatalog = { ids: RUNTIME_IDS, load: loadRuntimeAdapter };

export const OPERATION_PORTS: OperationPorts = { runtimes: RUNTIME_CATALOG, resolveRef: resolveInMirror };
