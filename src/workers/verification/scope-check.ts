import picomatch from 'picomatch';
import type { ChangedFile } from '../../shared/contracts/receipt.js';

export interface ScopeViolation {
  path: string;
  reason:
    | 'outside_allowed'
    | 'forbidden'
    | 'nested_repository'
    | 'symlink_outside_worktree'
    | 'name_refused_by_git'
    | 'path_too_deep'
    | 'path_too_long';
  glob?: string;
}

export interface ScopeRules {
  allowed_change_globs: readonly string[];
  forbidden_globs: readonly string[];
}

/**
 * Every path a change touches must match an allowed glob and no forbidden glob. A rename or
 * copy is checked on both its paths; a deletion on the path it deletes. Pure.
 */
export function checkScope(changes: readonly ChangedFile[], rules: ScopeRules): ScopeViolation[] {
  const options = { dot: true };
  const allowed = rules.allowed_change_globs.map((g) => ({ glob: g, match: picomatch(g, options) }));
  const forbidden = rules.forbidden_globs.map((g) => ({ glob: g, match: picomatch(g, options) }));
  const violations: ScopeViolation[] = [];
  const seen = new Set<string>();
  for (const change of changes) {
    for (const path of change.from === undefined ? [change.path] : [change.from, change.path]) {
      if (seen.has(path)) continue;
      seen.add(path);
      const hit = forbidden.find((f) => f.match(path));
      if (hit) violations.push({ path, reason: 'forbidden', glob: hit.glob });
      else if (!allowed.some((a) => a.match(path))) violations.push({ path, reason: 'outside_allowed' });
    }
  }
  return violations;
}
