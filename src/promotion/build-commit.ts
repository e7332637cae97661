/**
 * The promotion commit, built from trees only: a private index file (GIT_INDEX_FILE in a fresh
 * temp dir) is loaded with the base commit's tree, the captured patch is applied to that index
 * (`git apply --cached`), the index is written as a tree, and `git commit-tree` makes a commit
 * with the base as its parent. Nothing touches a working tree, the repository's own index or
 * HEAD; only objects are added. Dates are the receipt's, so the same operation and identity
 * always give the same commit.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Person } from '../shared/contracts/promotion.js';
import { UhError } from '../shared/errors.js';
import { runGit } from './promotion-git.js';

export interface CommitPlan {
  /** The repository (work tree or bare) where objects are written. */
  gitDir: string;
  baseCommit: string;
  patchPath: string;
  /** The receipt's `final_tree`; when given, the built tree must equal it. */
  expectedTree: string | null;
  message: string;
  author: Person;
  committer: Person;
  /** ISO time used for both author and committer dates. */
  date: string;
}

export async function buildCommit(plan: CommitPlan): Promise<{ commit: string; tree: string; treeVerified: boolean }> {
  const scratch = mkdtempSync(join(tmpdir(), 'uh-promote-'));
  const env = { GIT_INDEX_FILE: join(scratch, 'index') };
  const cwd = plan.gitDir;
  try {
    await runGit(['read-tree', plan.baseCommit], { cwd, env });
    // --whitespace=nowarn: the patch is applied as captured, whatever apply.whitespace says.
    await runGit(['apply', '--cached', '--whitespace=nowarn', plan.patchPath], { cwd, env });
    const tree = (await runGit(['write-tree'], { cwd, env })).stdout.trim();
    if (plan.expectedTree !== null && tree !== plan.expectedTree) {
      throw new UhError(
        'conflict',
        `the captured diff applied to ${plan.baseCommit.slice(0, 12)} gives tree ${tree}, not the receipt's final tree ${plan.expectedTree}`,
        {
          hint: 'the diff or the receipt was altered; nothing was promoted',
        },
      );
    }
    const identity = {
      GIT_AUTHOR_NAME: plan.author.name,
      GIT_AUTHOR_EMAIL: plan.author.email,
      GIT_AUTHOR_DATE: plan.date,
      GIT_COMMITTER_NAME: plan.committer.name,
      GIT_COMMITTER_EMAIL: plan.committer.email,
      GIT_COMMITTER_DATE: plan.date,
    };
    const { stdout } = await runGit(['commit-tree', tree, '-p', plan.baseCommit, '-F', '-'], {
      cwd,
      env: { ...env, ...identity },
      input: plan.message,
    });
    return { commit: stdout.trim(), tree, treeVerified: plan.expectedTree !== null };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The commit message: title, final message, then the trailers naming the operation and receipt. */
export function commitMessage(title: string, finalMessage: string, operationId: string, receiptDigest: string): string {
  const body = finalMessage.trim();
  return `${title.trim()}\n\n${body ? `${body}\n\n` : ''}Uh-Operation-Id: ${operationId}\nUh-Receipt-Digest: ${receiptDigest}\n`;
}
