/**
 * The git questions uh may answer without starting git, behind one port with two
 * implementations: `IN_PROCESS_GIT` (the fast path: uh reads git's files itself, and answers only
 * where it is sure of git's answer, null otherwise) and `GIT_PROCESSES` (every answer null: git
 * is asked, always). `UH_GIT_FAST_PATH=0` (src/shared/config.ts → `OperationSettings.gitFastPath`)
 * picks the second (`gitPathOf`). Every member may return null, and the caller then runs exactly
 * the git command the member stands for, so the two implementations must give the same trees,
 * names and patches (test/workers/verification/git-path-differential.test.ts runs both).
 *
 * Not behind the port, on purpose, because they replace no git process uh would run and are
 * stricter than git: the sandbox's git dirs written by hand (`sandbox/git-dir.ts`: no
 * `git init`, no template), the pool's scrub and its proof after `read-tree`
 * (`sandbox/worktree-scrub.ts`: git never sees a nested `.git`), and the read of the agent's own
 * HEAD (`verification/agent-head.ts`: running git in the directory the agent wrote is the risk).
 * With the fast path off the pool never skips its `read-tree` reset (workers/pipeline/sandbox-phases.ts).
 */
import type { OperationSettings } from '../operation/settings.js';
import { objectFormatOf, objectIdBytes } from './sandbox/git-dir.js';
import { readIndexEntries } from './sandbox/index-file.js';
import { readLocalRef } from './sandbox/local-ref.js';
import {
  worktreeAdditions,
  worktreeIgnored,
  worktreeUnchanged,
  type UnchangedBounds,
} from './sandbox/worktree-scrub.js';
import { addedFilesPatch, type AddedFile } from './verification/added-patch.js';
import { compileIgnoreRules } from './verification/ignore-rules.js';
import { writeIndexTree } from './verification/index-tree.js';
import { plainComponent, stageInProcess, type StagedFile, type StageInput } from './verification/stage-in-process.js';

/** What the diff's listing knows: uh's private index and the base commit's ignore rules. */
export interface ListingInput {
  workDir: string;
  /** uh's index of the sandbox (`sandboxPaths().index`), read only. */
  uhIndex: string;
  baseCommit: string;
  /** The base commit's ignore rules, one exclude file's text ('' when none). */
  ignoreRules: string;
}

export interface GitPath {
  /** `in-process`: the fast path; `processes`: git answers every question. */
  readonly kind: 'in-process' | 'processes';
  /**
   * The commit `ref` names in the local repository at `repoPath`, or null: the caller runs
   * `git rev-parse --verify <ref>^{commit}` there. `knownCommit(id)`: uh's mirror vouches `id` is a commit.
   */
  localRef(repoPath: string, ref: string, knownCommit: (id: string) => boolean): string | null;
  /**
   * What `ls-files --modified --deleted --others` would list for the diff: [] when the worktree
   * is exactly the base commit, the new files when only files were added; null: git lists.
   */
  listChanges(input: ListingInput): string[] | null;
  /** What `ls-files --others --ignored` would list under `input.ignoreRules`; null: git lists. */
  listIgnored(input: ListingInput): string[] | null;
  /** `git add --all --force` of the listed paths into `input.state`; null (state untouched): git stages. */
  stage(input: StageInput): Map<string, StagedFile> | null;
  /** The tree of an index `git add` wrote, its tree objects written; null: `git write-tree`. */
  indexTree(indexPath: string, objectsDir: string, hashBytes: 20 | 32): string | null;
  /** The patch of a change that only adds text files, as `git diff-tree` prints it; null: git diffs. */
  addedPatch(files: readonly AddedFile[]): Buffer | null;
}

/**
 * Up to these, the in-process comparison costs less than one `ls-files` process (on a 2-core
 * machine: 200 tracked files 9 ms against 15 ms, 1,000 about even, 5,000 twice git's time; see
 * docs/benchmarks.md); past them git is asked straight away.
 */
const UNCHANGED_BOUNDS: UnchangedBounds = { maxEntries: 500, maxHashBytes: 2 * 1024 * 1024 };

/** New files the in-process listing names at most (the in-process staging takes 200). */
const MAX_ADDED_LISTED = 200;

/**
 * The listing without git, for a small worktree: the new files when nothing else changed
 * (`worktreeAdditions`, [] when it is exactly the base commit as uh checked it out), under the
 * base commit's ignore rules when `ignore-rules.ts` takes them; else only the unchanged case
 * (`worktreeUnchanged`, where any new entry is a doubt). Null on any doubt, an entry it cannot
 * read included (a directory the agent made unreadable): git lists.
 */
function listedInProcess({ workDir, uhIndex, baseCommit, ignoreRules }: ListingInput): string[] | null {
  try {
    // A large index is not decoded only to be refused by the bound.
    const entries = readIndexEntries(uhIndex, objectIdBytes(baseCommit), UNCHANGED_BOUNDS.maxEntries);
    if (entries === null) return null;
    const format = objectFormatOf(baseCommit);
    const ignored = ignoreRules === '' ? () => false : compileIgnoreRules(ignoreRules);
    if (ignored === null) return worktreeUnchanged(workDir, uhIndex, entries, format, UNCHANGED_BOUNDS) ? [] : null;
    return worktreeAdditions(workDir, uhIndex, entries, format, {
      ...UNCHANGED_BOUNDS,
      maxAdded: MAX_ADDED_LISTED,
      plainName: plainComponent,
      ignored,
    });
  } catch {
    return null;
  }
}

/** Entries the in-process listing of ignored files walks at most (past them git lists). */
const MAX_IGNORED_VISITED = 5000;

/** The agent's ignored files without git, for a small index and rules `ignore-rules.ts` takes; null: git lists. */
function ignoredInProcess({ workDir, uhIndex, baseCommit, ignoreRules }: ListingInput): string[] | null {
  try {
    const entries = readIndexEntries(uhIndex, objectIdBytes(baseCommit), UNCHANGED_BOUNDS.maxEntries);
    const ignored = compileIgnoreRules(ignoreRules);
    if (entries === null || ignored === null) return null;
    return worktreeIgnored(workDir, entries, ignored, {
      maxEntries: UNCHANGED_BOUNDS.maxEntries,
      maxVisited: MAX_IGNORED_VISITED,
    });
  } catch {
    return null;
  }
}

/** The fast path: uh's readers of git's files, each answering only where it is sure of git's answer. */
export const IN_PROCESS_GIT: GitPath = Object.freeze({
  kind: 'in-process',
  localRef: readLocalRef,
  listChanges: listedInProcess,
  listIgnored: ignoredInProcess,
  stage: stageInProcess,
  indexTree: writeIndexTree,
  addedPatch: addedFilesPatch,
});

/** No fast path: every question goes to git. */
export const GIT_PROCESSES: GitPath = Object.freeze({
  kind: 'processes',
  localRef: () => null,
  listChanges: () => null,
  listIgnored: () => null,
  stage: () => null,
  indexTree: () => null,
  addedPatch: () => null,
});

/** The implementation this host's settings pick (`UH_GIT_FAST_PATH`). */
export function gitPathOf(settings: Pick<OperationSettings, 'gitFastPath'>): GitPath {
  return settings.gitFastPath ? IN_PROCESS_GIT : GIT_PROCESSES;
}
