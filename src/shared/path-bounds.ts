/**
 * The longest and deepest relative path a sandbox may hold (`OperationSettings.sandbox.paths`);
 * past either, the path is a scope violation named in the receipt (workers/verification/tree-violations.ts).
 */
export interface PathBounds {
  /** Bytes of the relative path (UTF-8). */
  readonly maxBytes: number;
  /** Components of the relative path. */
  readonly maxDepth: number;
}

/** Far past any real project, far under PATH_MAX (4,096) once under a sandbox root. */
export const DEFAULT_PATH_BOUNDS: PathBounds = Object.freeze({ maxBytes: 1024, maxDepth: 64 });
