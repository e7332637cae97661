/**
 * Promotion: an operation's captured diff becomes a commit (parent: the base commit) on a new
 * branch, optionally pushed, recorded as `uh.promotion.v0`. The order of effects:
 *
 *   policy (verdict) → earlier record (same target: the same promotion; other target: conflict)
 *   → diff digest check → commit from trees (tree checked against the receipt) → create-only ref
 *   → push (when asked) → mergeable check → record saved
 *
 * Nothing but objects and the new ref is written to the repository: never HEAD, the index, the
 * working tree or the stash. Callers supply the receipt, the patch, the repository (the user's
 * own for a local path, the mirror for a remote URL) and where records live.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import type { Person, PromotionRecord } from '../shared/contracts/promotion.js';
import type { Receipt } from '../shared/contracts/receipt.js';
import { digestOf } from '../shared/digest.js';
import { invalidInput, UhError } from '../shared/errors.js';
import { createBranch, expandBranch, mergeableInto } from './branch-ref.js';
import { buildCommit, commitMessage } from './build-commit.js';
import { policyRefusal } from './promotion-policy.js';
import { runGit, scrubUrls } from './promotion-git.js';
import { pushBranch } from './push-branch.js';

/** Where an operation's promotion record lives (a file beside the receipt, and Redis in queue mode). */
export interface PromotionRecords {
  load(): Promise<PromotionRecord | null>;
  save(record: PromotionRecord): Promise<void>;
}

export interface PromoteRequest {
  receipt: Receipt;
  /** The captured diff (diff.patch); its digest must equal the receipt's `diff_digest`. */
  patchPath: string;
  repository: { gitDir: string; kind: 'local' | 'mirror'; url: string };
  /** A branch name or pattern (`{operation_id}`, `{mission_id}`, `{runtime}`); default `uh/{operation_id}`. */
  branch?: string | undefined;
  /** Push to this remote (a remote name of the repository, or a URL). */
  push?: { remote: string } | null;
  allowUnverified?: boolean;
  identity: { author: Person; committer: Person };
  via: PromotionRecord['promoted_by']['via'];
  records: PromotionRecords;
  now?: () => Date;
}

export interface PromoteResult {
  record: PromotionRecord;
  /** False when this operation had already been promoted to the same branch. */
  created: boolean;
}

async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}

function checkPromotable(req: PromoteRequest): string {
  const { receipt } = req;
  const refusal = policyRefusal(receipt, req.allowUnverified === true);
  if (refusal) throw refusal;
  if (receipt.repository.base_commit === null)
    throw invalidInput(`operation ${receipt.operation_id} has no base commit in its receipt: nothing to promote`);
  if (receipt.changed_files.length === 0 || receipt.diff_bytes === 0) {
    throw invalidInput(
      `operation ${receipt.operation_id} changed no files: nothing to promote`,
      [],
      'a branch would equal its base commit',
    );
  }
  return receipt.repository.base_commit;
}

/** The same promotion again, or a conflict when it asks for another target. */
function checkEarlier(earlier: PromotionRecord | null, branch: string, req: PromoteRequest): PromotionRecord | null {
  if (earlier?.decision !== 'promoted' || earlier.commit === null) return null;
  const id = req.receipt.operation_id;
  if (earlier.branch !== branch) {
    throw new UhError(
      'conflict',
      `operation ${id} is already promoted to branch ${earlier.branch} (commit ${earlier.commit.slice(0, 12)}), not ${branch}`,
      {
        hint: `promoting again returns the same branch: uh mission promote ${id} --branch ${earlier.branch}`,
      },
    );
  }
  const wanted = req.push ? scrubUrls(req.push.remote) : null;
  if (wanted !== null && earlier.pushed !== null && earlier.pushed.remote !== wanted) {
    throw new UhError('conflict', `operation ${id} was already pushed to ${earlier.pushed.remote}, not ${wanted}`, {
      hint: 'push the branch elsewhere by hand with git push',
    });
  }
  return earlier;
}

export async function promoteOperation(req: PromoteRequest): Promise<PromoteResult> {
  const { receipt, repository } = req;
  const now = req.now ?? (() => new Date());
  const baseCommit = checkPromotable(req);
  const loaded = await req.records.load();
  // No branch asked for: an earlier promotion's branch is the answer (promoting twice is the same promotion).
  const branch =
    req.branch === undefined && loaded?.decision === 'promoted'
      ? loaded.branch
      : expandBranch(req.branch, {
          operation_id: receipt.operation_id,
          mission_id: receipt.mission_id,
          runtime: receipt.runtime.adapter_id,
        });
  const earlier = checkEarlier(loaded, branch, req);
  const receiptDigest = digestOf(receipt);

  const built = await commitFor(req, earlier, baseCommit, receiptDigest);
  await createBranch(repository.gitDir, branch, built.commit, receipt.operation_id);
  const created = earlier === null;

  const record: PromotionRecord = {
    schema_version: 'uh.promotion.v0',
    operation_id: receipt.operation_id,
    decision: 'promoted',
    reason: null,
    verdict: receipt.verdict,
    branch,
    commit: built.commit,
    tree: built.tree || null,
    base_commit: baseCommit,
    receipt_digest: receiptDigest,
    tree_verified: built.treeVerified,
    repository: { url: scrubUrls(repository.url), kind: repository.kind },
    pushed: earlier?.pushed ?? null,
    promoted_by: earlier?.promoted_by ?? { user: safeUser(), host: hostname(), via: req.via },
    promoted_at: earlier?.promoted_at ?? now().toISOString(),
    author: earlier?.author ?? req.identity.author,
    committer: earlier?.committer ?? req.identity.committer,
    mergeable: await mergeableInto(repository.gitDir, receipt.repository.ref, built.commit),
  };
  if (req.push && record.pushed === null) {
    try {
      // A mirror keeps no remote in its config (security.md, "Git"): its `origin` is the repository URL.
      const via = repository.kind === 'mirror' && req.push.remote === 'origin' ? repository.url : req.push.remote;
      const pushed = await pushBranch(repository.gitDir, via, built.commit, branch);
      record.pushed = { ...pushed, remote: req.push.remote, at: now().toISOString() };
    } finally {
      await req.records.save(record); // a rejected push still leaves the local branch on record
    }
  } else await req.records.save(record);
  return { record, created };
}

/**
 * The promotion commit: an earlier promotion's when this repository has it; else built from the
 * patch (with the earlier identity, so a rebuild on another host gives the same commit).
 */
async function commitFor(
  req: PromoteRequest,
  earlier: PromotionRecord | null,
  baseCommit: string,
  receiptDigest: string,
): Promise<{ commit: string; tree: string; treeVerified: boolean }> {
  const { receipt, repository } = req;
  if (earlier?.commit && (await hasCommit(repository.gitDir, earlier.commit))) {
    return { commit: earlier.commit, tree: earlier.tree ?? '', treeVerified: earlier.tree_verified };
  }
  const patchDigest = await fileDigest(req.patchPath);
  if (patchDigest !== receipt.diff_digest) {
    throw new UhError(
      'conflict',
      `the diff of ${receipt.operation_id} (${patchDigest.slice(0, 19)}…) does not match the receipt's diff_digest (${receipt.diff_digest.slice(0, 19)}…)`,
      {
        hint: 'a diff stored in Redis may be truncated (UH_ARTIFACT_CAP_BYTES); promote on the worker host, or raise the cap',
      },
    );
  }
  const built = await buildCommit({
    gitDir: repository.gitDir,
    baseCommit,
    patchPath: req.patchPath,
    expectedTree: receipt.final_tree ?? null,
    message: commitMessage(receipt.title, receipt.final_message, receipt.operation_id, receiptDigest),
    author: earlier?.author ?? req.identity.author,
    committer: earlier?.committer ?? req.identity.committer,
    date: receipt.finished_at,
  });
  if (earlier?.commit && built.commit !== earlier.commit) {
    throw new UhError(
      'conflict',
      `operation ${receipt.operation_id} was promoted as ${earlier.commit.slice(0, 12)}, but rebuilding it here gives ${built.commit.slice(0, 12)}`,
      {
        hint: 'promote where the earlier promotion was made, or fetch its branch',
      },
    );
  }
  return built;
}

async function hasCommit(gitDir: string, commit: string): Promise<boolean> {
  return (await runGit(['cat-file', '-e', `${commit}^{commit}`], { cwd: gitDir, okCodes: [1, 128] })).code === 0;
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}
