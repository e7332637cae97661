/**
 * The branch side of a promotion: name the branch, create its ref (create-only, never moving an
 * existing one), and ask `git merge-tree --write-tree` (git 2.38+) whether the commit still
 * merges cleanly into the mission ref's current head.
 */
import { branchNameProblem, DEFAULT_BRANCH_PATTERN } from '../shared/contracts/promotion.js';
import { invalidInput, UhError } from '../shared/errors.js';
import { runGit } from './promotion-git.js';

/** Fill `{operation_id}`, `{mission_id}`, `{runtime}` and check the result is a branch name. */
export function expandBranch(
  pattern: string | undefined,
  ids: { operation_id: string; mission_id: string; runtime: string },
  field = '--branch',
): string {
  const name = (pattern ?? DEFAULT_BRANCH_PATTERN).replace(
    /\{(operation_id|mission_id|runtime)\}/g,
    (_, key: keyof typeof ids) => ids[key],
  );
  const stripped = name.startsWith('refs/heads/') ? name.slice('refs/heads/'.length) : name;
  const problem = branchNameProblem(stripped);
  if (problem) throw invalidInput(`${field}: "${name}" is not a valid branch name: ${problem}`);
  return stripped;
}

/** The commit a branch points at, or null when it does not exist. */
export async function branchHead(gitDir: string, branch: string): Promise<string | null> {
  const { stdout, code } = await runGit(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], {
    cwd: gitDir,
    okCodes: [1, 128],
  });
  return code === 0 ? stdout.trim() : null;
}

/**
 * Create `refs/heads/<branch>` at `commit`, only if it does not exist (the empty old value makes
 * `update-ref` atomic create-only). An existing branch at the same commit is the same promotion;
 * at another commit it is a conflict.
 */
export async function createBranch(
  gitDir: string,
  branch: string,
  commit: string,
  operationId: string,
): Promise<'created' | 'existing'> {
  const ref = `refs/heads/${branch}`;
  const { code } = await runGit(['update-ref', '-m', `uh promote ${operationId}`, ref, commit, ''], {
    cwd: gitDir,
    okCodes: [1, 128],
  });
  if (code === 0) return 'created';
  const head = await branchHead(gitDir, branch);
  if (head === commit) return 'existing';
  throw new UhError(
    'conflict',
    `branch ${branch} already exists at ${head ?? 'an unreadable ref'}, not at this operation's commit ${commit.slice(0, 12)}`,
    {
      hint: `pick another name with --branch, or delete the branch first (git branch -D ${branch})`,
    },
  );
}

export interface Mergeable {
  into: string;
  head: string;
  clean: boolean;
  conflicts: string[];
}

/** Does `commit` merge cleanly into `ref`'s current head? null when the ref cannot be resolved here. */
export async function mergeableInto(gitDir: string, ref: string, commit: string): Promise<Mergeable | null> {
  const resolved = await runGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], {
    cwd: gitDir,
    okCodes: [1, 128],
  });
  if (resolved.code !== 0) return null;
  const head = resolved.stdout.trim();
  // Exit 0: clean; 1: conflicts (the tree, then the conflicted paths); anything else: cannot tell.
  const merged = await runGit(['merge-tree', '--write-tree', '--name-only', '--no-messages', head, commit], {
    cwd: gitDir,
    okCodes: [1, 128],
  });
  if (merged.code !== 0 && merged.code !== 1) return null;
  const conflicts = merged.code === 1 ? [...new Set(merged.stdout.split('\n').slice(1).filter(Boolean))] : [];
  return { into: ref, head, clean: merged.code === 0, conflicts };
}
