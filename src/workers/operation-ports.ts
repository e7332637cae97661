/**
 * The real ports of the operation layer: the registered runtimes and the mirror cache. Producers
 * import this one module to prepare an operation (an allowed entry point, .dependency-cruiser.cjs).
 */
import type { OperationPorts } from '../operation/ports.js';
import { RUNTIME_ADAPTERS } from './runtimes/registry.js';
import { resolveInMirror } from './sandbox/mirror-cache.js';

export const OPERATION_PORTS: OperationPorts = { runtimes: RUNTIME_ADAPTERS, resolveRef: resolveInMirror };
