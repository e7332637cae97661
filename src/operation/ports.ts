/**
 * What the operation layer needs from outside it, passed in by the caller. The layer imports no
 * adapter and no sandbox code (test/architecture/layers.test.ts), so the runtime catalog and the
 * ref resolver are injected; `src/workers/operation-ports.ts` holds the real ones.
 */
import type { ManifestSource } from '../shared/contracts/adapter-manifest.js';
import type { AnyRuntimeAdapter } from '../shared/runtime/v1/index.js';

/** Every runtime adapter this process can resolve a mission to, each loaded on first use. */
export interface RuntimeCatalog {
  /** Every registered id, in registration order. */
  readonly ids: readonly string[];
  /** The adapter registered as `id`, or undefined. */
  load(id: string): Promise<AnyRuntimeAdapter | undefined>;
  /**
   * Manifests this host does not hold in `<state>/adapters/` (the fleet's published ones,
   * `uh adapter publish`): looked up after the host's own file, before the built-in default.
   */
  readonly manifests?: ManifestSource;
}

/** A catalog of adapters already in hand (tests, embedders). */
export function catalogOf(adapters: readonly AnyRuntimeAdapter[]): RuntimeCatalog {
  return { ids: adapters.map((a) => a.id), load: async (id) => adapters.find((a) => a.id === id) };
}

/** A repository's bare mirror in the cache (the sandbox is a worktree of it). */
export interface MirrorRef {
  path: string;
  url: string;
  lockDir: string;
}

/** Resolve a ref to a commit, fetching into the mirror cache when the commit is missing. */
export type ResolveRef = (cacheDir: string, url: string, ref: string) => Promise<{ mirror: MirrorRef; commit: string }>;

export interface OperationPorts {
  /** Must list every registered runtime: an id missing here is refused as unknown. */
  runtimes: RuntimeCatalog;
  /** Must refuse a ref that does not name a commit, with an error naming `repository.ref`. */
  resolveRef: ResolveRef;
}
