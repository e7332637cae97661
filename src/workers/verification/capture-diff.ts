/**
 * Diff capture against the base commit: tracked and untracked files, including anything the
 * runtime committed, computed by uh's PRIVATE git dir over the worktree (`sandboxPaths`), never
 * by the agent's `.git`:
 * - the index is uh's own, written at checkout: the listing reads it as it is (read-only), and
 *   git stages into a scratch copy of it (its mtime kept, so git's racy-entry check still
 *   compares content); so no assume-unchanged/skip-worktree bit the agent set (in its own index)
 *   can hide a change, and no config the agent wrote (filters, fsmonitor, hooks) is read;
 * - untracked files are listed with ONLY the base commit's ignore rules (`base-ignore.ts`):
 *   a `.gitignore` the agent added or changed, or its `.git/info/exclude`, hides nothing;
 * - a nested repository (a gitlink) and a symlink whose target leaves the worktree are flagged
 *   as scope violations (`flagged`).
 * The patch streams to disk; only the name list is held in memory.
 *
 * Processes, with the git fast path (`options.git` is `IN_PROCESS_GIT`; with `GIT_PROCESSES`,
 * picked by `UH_GIT_FAST_PATH=0`, each step below done by an in-process module is git's instead):
 * none when nothing changed: a small worktree is first compared with uh's index in
 * process (`worktreeUnchanged`: stat data, else content) and, exactly as checked out, gives the
 * base tree and an empty patch; none either when it only gained new files (`worktreeAdditions`
 * lists them, under the base's ignore rules when `ignore-rules.ts` takes them). Otherwise one
 * `ls-files` lists every modified, deleted and untracked path; when it lists none the final tree
 * is the base tree and nothing else runs.
 * Otherwise one `update-index` stages exactly those paths, given on its stdin, in time linear in
 * their number (`stage-with-git.ts`: `add` with N pathspecs is quadratic; one more process drops
 * paths beyond a symbolic link first), and the final tree is built from the index it wrote
 * (`index-tree.ts`; `write-tree` when that reader cannot vouch for it); a plain change (no
 * attributes, plain names, small files: `stage-in-process.ts`) is staged and its tree built in
 * process, with no git process at all. Then one `diff-tree --patch-with-raw` gives the names
 * (renames detected) and the patch together; for new text files staged in process, the patch is
 * written in process instead (`added-patch.ts`, git's bytes). The base commit's tree and ignore
 * rules come from uh's cache (`baseFactsDir`), or two more git processes the first time.
 */
import {
  copyFileSync,
  existsSync,
  lstatSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { ChangedFile } from '../../shared/contracts/receipt.js';
import { spawnGroup } from '../../shared/process/spawn-group.js';
import { UhError } from '../../shared/errors.js';
import { git, gitArgv, gitEnv, GIT_TIMEOUTS_MS, type GitCallOptions } from '../sandbox/git.js';
import { sandboxPaths } from '../sandbox/worktree.js';
import { objectIdBytes, writeNeutralAttributes } from '../sandbox/git-dir.js';
import type { GitPath } from '../git-path.js';
import { keptExcludesFile, readBaseFacts } from './base-ignore.js';
import { readIndexState, writeLooseObject, writeStateTree } from './index-tree.js';
import type { StagedFile } from './stage-in-process.js';
import { stageWithGit } from './stage-with-git.js';
import { readAgentHead } from './agent-head.js';
import { RawPatchSplit } from './raw-patch-split.js';
import { CappedPatchFile, cappedPatchStream, writeCappedPatch, type PatchFacts } from './capped-patch.js';
import { DEFAULT_DIFF_CAP_BYTES } from '../../shared/config.js';
import { adjustListing } from './strip-ignored.js';
import type { ScopeViolation } from './scope-check.js';
import { byCodeUnit } from '../../shared/compare.js';

export interface DiffCapture {
  changed: ChangedFile[];
  patchPath: string;
  /** Bytes of `patchPath` as written, and their digest (under the cap: `capped-patch.ts`). */
  bytes: number;
  digest: string;
  /** The patch was longer than `capBytes`: the file holds its first `capBytes`, then a marker. */
  truncated: boolean;
  /** Bytes of the whole patch, as git (or `added-patch.ts`) printed it. */
  bytesTotal: number;
  capBytes: number;
  headCommit: string | null;
  /** The tree of the sandbox's final state (what the patch applied to the base commit yields). */
  tree: string | null;
  /** Changes the scope check refuses whatever the globs say: nested repositories, escaping symlinks. */
  flagged: ScopeViolation[];
}

export interface DiffCallOptions extends GitCallOptions {
  /**
   * uh's cache of each base commit's tree and ignore rules (`readBaseFacts`); must lie outside
   * every sandbox. Unset: read from git each time.
   */
  baseFactsDir?: string;
  /** Who answers the git questions: the fast path or git processes (`gitPathOf(settings)`). */
  git: GitPath;
  /** The most bytes `diff.patch` keeps (`UH_DIFF_CAP_BYTES`); default DEFAULT_DIFF_CAP_BYTES. */
  capBytes?: number;
  /** Ignored files the mission keeps (`stripIgnored`): staged as new files. */
  keptIgnored?: readonly string[];
  /** Paths the tree walk flagged (`treeViolations`): never staged (git refuses or skips them). */
  excluded?: readonly string[];
  /**
   * Where anything can have changed, when the sandbox knows (an overlay's upper layer,
   * `overlay-changes.ts`): the listing is `ls-files` of these pathspecs only, linear in the
   * change; [] means nothing changed. Unset: the whole worktree is listed.
   */
  pathspecs?: readonly string[];
}

export { baseFactsDir } from './base-ignore.js';

const EMPTY_DIGEST = `sha256:${createHash('sha256').digest('hex')}`;

type GitRun = (
  args: string[],
  extra?: { okCodes?: number[]; input?: string; stderrFails?: string },
) => Promise<{ stdout: string }>;

interface DiffGit {
  path: GitPath;
  call: GitCallOptions;
  cwd: string;
  gitDir: string;
  workTree: string;
  env: Record<string, string>;
}

const TREE = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

function noPrivateGitDir(workDir: string, gitDir: string): UhError {
  return new UhError(
    'sandbox',
    `sandbox ${workDir} has no private git dir (${gitDir}): it predates this version of uh`,
    {
      hint: 'run the mission again in a new sandbox',
    },
  );
}

/** A git runner over uh's private git dir and the worktree, with the given index file. */
function gitOn(g: DiffGit, indexFile: string): GitRun {
  return (args, extra = {}) =>
    git(args, {
      ...g.call,
      ...extra,
      cwd: g.cwd,
      gitDir: g.gitDir,
      workTree: g.workTree,
      env: { ...g.env, GIT_INDEX_FILE: indexFile },
    });
}

type Listing = ReturnType<typeof parseListing>;
type Patched = { changed: ChangedFile[] } & PatchFacts;
type Staged = Patched & { tree: string | null };
const NO_PATCH: PatchFacts = { bytes: 0, digest: EMPTY_DIGEST, truncated: false, bytesTotal: 0 };

/** Stage what the listing names, build the final tree, and write the patch against the base. */
async function stageAndPatch(
  g: DiffGit,
  at: { workDir: string; uhIndex: string; index: string; baseCommit: string; baseTree: string | null },
  listed: Listing,
  patch: { path: string; capBytes: number },
): Promise<Staged> {
  const patchPath = patch.path;
  const unchanged: Staged = { changed: [], ...NO_PATCH, tree: at.baseTree };
  if (listed.paths.length === 0) return (writeFileSync(patchPath, ''), unchanged);
  const where = {
    workDir: at.workDir,
    uhIndex: at.uhIndex,
    index: at.index,
    gitDir: g.gitDir,
    baseCommit: at.baseCommit,
  };
  const { tree, added } = await stageAndTree(g.path, gitOn(g, at.index), where, listed);
  if (tree === at.baseTree) return (writeFileSync(patchPath, ''), unchanged);
  const patched = added ? writeAddedPatch(added, patch) : await diffAndPatch(g, at.baseCommit, tree, patch);
  return { ...patched, tree };
}

/** `call` bounds the git calls (timeout, abort signal). */
export async function captureDiff(
  workDir: string,
  baseCommit: string,
  patchPath: string,
  scratchDir: string,
  options: DiffCallOptions,
): Promise<DiffCapture> {
  const paths = sandboxPaths(workDir);
  if (!existsSync(paths.gitDir) || !existsSync(paths.index)) throw noPrivateGitDir(workDir, paths.gitDir);
  const {
    baseFactsDir,
    git: path,
    capBytes = DEFAULT_DIFF_CAP_BYTES,
    keptIgnored = [],
    excluded = [],
    pathspecs,
    ...call
  } = options;
  const index = join(scratchDir, 'diff.index');
  const scratchExcludes = join(scratchDir, 'base-excludes');
  const env = { GIT_INDEX_FILE: index, GIT_LITERAL_PATHSPECS: '1' };
  const g: DiffGit = { path, call, cwd: workDir, gitDir: paths.gitDir, workTree: workDir, env };
  // No attribute of any `.gitattributes` applies to the listing, the staging or the patch.
  writeNeutralAttributes(paths.gitDir);
  try {
    const base = await readBaseFacts(paths.gitDir, baseCommit, baseFactsDir ?? null, call);
    const listedNew =
      pathspecs === undefined
        ? path.listChanges({ workDir, uhIndex: paths.index, baseCommit, ignoreRules: base.excludes })
        : pathspecs.length === 0
          ? []
          : null;
    const additions = listedNew && adjustListing({ paths: listedNew }, keptIgnored, excluded).paths;
    const headCommit = () => readAgentHead(paths.agentGitDir);
    if (additions?.length === 0) {
      writeFileSync(patchPath, '');
      const empty = { changed: [], patchPath, ...NO_PATCH, capBytes, flagged: [] };
      return { ...empty, headCommit: headCommit(), tree: base.tree };
    }
    // ls-files writes no index (and GIT_OPTIONAL_LOCKS=0 forbids a refresh): uh's own serves.
    const listed = additions
      ? { paths: additions, deleted: [], nested: [], onlyAdded: true }
      : adjustListing(
          parseListing(
            await listChanges(gitOn(g, paths.index), base.excludes, baseCommit, {
              factsDir: baseFactsDir ?? null,
              scratch: scratchExcludes,
              pathspecs: pathspecs ?? [],
            }),
          ),
          keptIgnored,
          excluded,
        );
    const at = { workDir, uhIndex: paths.index, index, baseCommit, baseTree: base.tree };
    const result = await stageAndPatch(g, at, listed, { path: patchPath, capBytes });
    const nested = listed.nested.map((path): ChangedFile => ({ path, status: 'added' }));
    const changed = [...result.changed, ...nested].sort((a, b) => byCodeUnit(a.path, b.path));
    const flagged = [
      ...listed.nested.map((path): ScopeViolation => ({ path, reason: 'nested_repository' })),
      ...escapingSymlinks(workDir, changed),
    ];
    const { bytes, digest, truncated, bytesTotal, tree } = result;
    const facts = { bytes, digest, truncated, bytesTotal, capBytes };
    return { changed, patchPath, ...facts, headCommit: headCommit(), tree, flagged };
  } finally {
    for (const file of [index, scratchExcludes]) rmSync(file, { force: true });
  }
}

/**
 * A change of new text files only, staged in process: the files, in git's order, and their patch
 * as git prints it (`added-patch.ts`). Null when it is anything else: `diff-tree` writes it.
 */
function addedOnly(path: GitPath, listed: { onlyAdded: boolean }, staged: Map<string, StagedFile>): AddedChange | null {
  if (!listed.onlyAdded) return null;
  // Every listed path was staged; a deletion among them (null) is no addition.
  const files = [...staged.values()]
    .filter((f): f is NonNullable<StagedFile> => f !== null)
    .sort((a, b) => byCodeUnit(a.path, b.path));
  if (files.length !== staged.size) return null;
  const patch = path.addedPatch(files);
  return patch && { paths: files.map((f) => f.path), patch };
}

interface AddedChange {
  paths: string[];
  patch: Buffer;
}

function writeAddedPatch(added: AddedChange, patch: { path: string; capBytes: number }): Patched {
  return {
    changed: added.paths.map((path): ChangedFile => ({ path, status: 'added' })),
    ...writeCappedPatch(patch.path, added.patch, patch.capBytes),
  };
}

/**
 * Stage the listed paths and name the final tree. A plain change is staged and its tree built in
 * process (`stage-in-process.ts`, `index-tree.ts`); else git stages it (`stage-with-git.ts`) and
 * the tree is built from the index git wrote, or by `git write-tree` when that reader cannot vouch for it. The
 * final tree is what a promotion must reproduce; if git cannot write it either, promotion checks
 * the diff digest only (null). New text files alone (`added`, their patch made here) need no git
 * process after this one, so their objects are never written: only their ids are computed.
 */
async function stageAndTree(
  path: GitPath,
  run: GitRun,
  at: { workDir: string; uhIndex: string; index: string; gitDir: string; baseCommit: string },
  listed: { paths: string[]; deleted: string[]; onlyAdded: boolean },
): Promise<{ tree: string | null; added: AddedChange | null }> {
  const hashBytes = objectIdBytes(at.baseCommit);
  const objectsDir = join(at.gitDir, 'objects');
  // uh's index is read, never written: the in-process staging changes a copy in memory.
  const state = readIndexState(at.uhIndex, hashBytes);
  const staged =
    state &&
    path.stage({
      state,
      workDir: at.workDir,
      gitDir: at.gitDir,
      baseCommit: at.baseCommit,
      listed,
      hashOnly: true,
    });
  if (state && staged) {
    const added = addedOnly(path, listed, staged);
    const tree = added && writeStateTree(state, null);
    if (tree) return { tree, added };
    // diff-tree reads them: the blobs and trees are written now.
    for (const file of staged.values()) if (file) writeLooseObject(objectsDir, state.hash, 'blob', file.body);
    const written = writeStateTree(state, objectsDir);
    if (written !== null) return { tree: written, added: null };
  }
  copyIndex(at.uhIndex, at.index);
  await stageWithGit(run, at.workDir, listed.paths);
  const built = path.indexTree(at.index, objectsDir, hashBytes);
  if (built !== null) return { tree: built, added: null };
  const written = (await run(['write-tree'], { okCodes: [1, 128] })).stdout.trim();
  return { tree: TREE.test(written) ? written : null, added: null };
}

/**
 * `ls-files` of every modified, deleted and untracked path, untracked ones under the base's
 * ignore rules only. The kept rules file may vanish under it (`uh gc` prunes old base facts): git
 * then refuses the file, and the listing runs once more on a scratch copy of the rules.
 */
async function listChanges(
  run: (args: string[]) => Promise<{ stdout: string }>,
  rules: string,
  baseCommit: string,
  at: { factsDir: string | null; scratch: string; pathspecs: readonly string[] },
): Promise<string> {
  const { factsDir, scratch } = at;
  const limit = at.pathspecs.length > 0 ? ['--', ...at.pathspecs] : [];
  const excludes = (file: string | null) => (file ? [`--exclude-from=${file}`] : []);
  const list = async (file: string | null) =>
    limit.length > 0
      ? { stdout: await listUnder(run, excludes(file), limit) }
      : run(['ls-files', '-z', '-t', '--modified', '--deleted', '--others', ...excludes(file)]);
  const file = excludesFile(rules, baseCommit, factsDir, scratch);
  if (file === null || file === scratch) return (await list(file)).stdout;
  try {
    return (await list(file)).stdout;
  } catch (error) {
    if (existsSync(file)) throw error;
    writeFileSync(scratch, rules);
    return (await list(scratch)).stdout;
  }
}

/** `diff-files` statuses as the `ls-files -t` tags `parseListing` reads: deleted `R`, else changed `C`. */
const TAG_OF: Record<string, string> = { D: 'R', M: 'C', T: 'C' };

/**
 * The listing under pathspecs (an overlay's upper layer names them), in `ls-files -t` form:
 * tracked changes from `diff-files` and untracked paths from `ls-files --others`. Not one
 * `ls-files --modified --deleted`: git lstat()s every index entry for it before matching the
 * pathspecs, which on a 50,000-file base is 50,000 lstat()s for one changed file; `diff-files`
 * matches first. A path whose stat data alone changed is listed too; staging it changes nothing.
 */
async function listUnder(
  run: (args: string[]) => Promise<{ stdout: string }>,
  excludes: string[],
  limit: string[],
): Promise<string> {
  const [tracked, others] = await Promise.all([
    run(['diff-files', '-z', '--name-status', '--no-renames', ...limit]),
    run(['ls-files', '-z', '-t', '--others', ...excludes, ...limit]),
  ]);
  const fields = tracked.stdout.split('\0');
  const out: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) out.push(`${TAG_OF[fields[i] as string] ?? 'C'} ${fields[i + 1]}`);
  return [...out, others.stdout].join('\0');
}

/**
 * The file of the base commit's ignore rules for `ls-files --exclude-from`, or null when it has
 * none (no file at all): the one kept beside the base facts, else a scratch file.
 */
function excludesFile(rules: string, baseCommit: string, factsDir: string | null, scratch: string): string | null {
  if (rules === '') return null;
  const kept = factsDir ? keptExcludesFile(factsDir, baseCommit, rules) : null;
  if (kept !== null) return kept;
  writeFileSync(scratch, rules);
  return scratch;
}

/** uh's index copied with its mtime, so entries as new as the index stay "racy" (compared by content). */
function copyIndex(from: string, to: string): void {
  copyFileSync(from, to);
  const st = statSync(from);
  utimesSync(to, st.atime, st.mtime);
}

/**
 * `ls-files -t -z` output: paths to stage (modified `C`, deleted `R`, untracked `?`), and the
 * nested repositories (an untracked directory listed with a trailing slash: its files would hide
 * in a gitlink). Pure.
 */
export function parseListing(output: string): {
  paths: string[];
  deleted: string[];
  nested: string[];
  onlyAdded: boolean;
} {
  const paths = new Set<string>();
  const deleted = new Set<string>();
  const nested: string[] = [];
  let onlyAdded = true;
  for (const entry of output.split('\0')) {
    if (entry.length < 3 || entry[1] !== ' ') continue;
    const path = entry.slice(2);
    if (entry[0] === '?' && path.endsWith('/')) nested.push(path.slice(0, -1));
    else paths.add(path);
    if (entry[0] === 'R') deleted.add(path);
    if (entry[0] !== '?') onlyAdded = false;
  }
  return { paths: [...paths], deleted: [...deleted], nested, onlyAdded };
}

/**
 * Names and patch from one git process: `diff-tree` from the base commit to the final tree, or,
 * when no tree could be written, `diff --cached` against the scratch index.
 */
async function diffAndPatch(
  g: DiffGit,
  baseCommit: string,
  tree: string | null,
  patch: { path: string; capBytes: number },
): Promise<Patched> {
  const patchPath = patch.path;
  // --full-index: whole object ids, so the patch is the same whatever else the store holds.
  const options = ['--no-ext-diff', '--no-textconv', '--binary', '--full-index', '-M', '--patch-with-raw', '-z'];
  const args = tree ? ['diff-tree', '-r', ...options, baseCommit, tree] : ['diff', '--cached', ...options, baseCommit];
  const child = spawnGroup({
    argv: gitArgv([`--git-dir=${g.gitDir}`, `--work-tree=${g.workTree}`, ...args]),
    cwd: g.cwd,
    env: gitEnv(g.env),
    stdout: 'pipe',
    stderr: 'ignore',
    timeoutMs: g.call.timeoutMs ?? GIT_TIMEOUTS_MS.diff,
    ...(g.call.signal ? { signal: g.call.signal } : {}),
  });
  const split = new RawPatchSplit();
  const file = cappedPatchStream(new CappedPatchFile(patchPath, patch.capBytes));
  const [exit, copied] = await Promise.all([
    child.result,
    child.stdout
      ? pipeline(child.stdout, split, file.stream).then(
          () => null,
          (error: unknown) => error,
        )
      : Promise.resolve(new Error('no stdout')),
  ]);
  if (exit.timedOut || exit.aborted)
    throw new UhError('sandbox', `git diff ${exit.timedOut ? 'timed out' : 'was aborted'} in ${g.workTree}`, {
      hint: 'the diff of a very large change can be slow: run again',
    });
  if (exit.exitCode !== 0) throw new UhError('sandbox', `git ${args[0]} exited ${exit.exitCode}`);
  if (copied)
    throw new UhError('sandbox', `the diff could not be written to ${patchPath}: ${(copied as Error).message}`, {
      hint: 'check the free space of the state dir',
    });
  return { changed: split.changed(), ...file.facts() };
}

/** Changed symlinks whose target resolves outside the worktree (absolute, `..`, or through another link). */
function escapingSymlinks(workDir: string, changed: readonly ChangedFile[]): ScopeViolation[] {
  const root = realpathSync(workDir);
  const out: ScopeViolation[] = [];
  for (const change of changed) {
    if (change.status === 'deleted') continue;
    const full = join(root, change.path);
    let target: string;
    try {
      if (!lstatSync(full).isSymbolicLink()) continue;
      target = readlinkSync(full);
    } catch {
      continue;
    }
    const lexical = resolve(dirname(full), target);
    let real = lexical;
    try {
      real = realpathSync(full);
    } catch {
      // A dangling link: judge its text.
    }
    const inside = (p: string) => {
      const rel = relative(root, p);
      return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
    };
    if (!inside(lexical) || !inside(real)) out.push({ path: change.path, reason: 'symlink_outside_worktree' });
  }
  return out;
}
