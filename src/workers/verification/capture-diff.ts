/**
 * Diff capture against the base commit: tracked and untracked files, including anything the
 * runtime committed, computed by uh's PRIVATE git dir over the worktree (`sandboxPaths`), never
 * by the agent's `.git`:
 * - the index is a scratch copy of uh's own index written at checkout, so no
 *   assume-unchanged/skip-worktree bit the agent set (in its own index) can hide a change, and
 *   no config the agent wrote (filters, fsmonitor, hooks) is read;
 * - untracked files are listed with ONLY the base commit's ignore rules (`base-ignore.ts`):
 *   a `.gitignore` the agent added or changed, or its `.git/info/exclude`, hides nothing;
 * - a nested repository (a gitlink) and a symlink whose target leaves the worktree are flagged
 *   as scope violations (`flagged`).
 * The patch streams to disk; only the name list is held in memory.
 */
import { copyFileSync, existsSync, lstatSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { ChangedFile } from '../../shared/contracts/receipt.js';
import { spawnGroup } from '../../shared/process/spawn-group.js';
import { UhError } from '../../shared/errors.js';
import { git, gitArgv, gitEnv, GIT_TIMEOUTS_MS, type GitCallOptions } from '../sandbox/git.js';
import { sandboxPaths } from '../sandbox/worktree.js';
import { parseNameStatusZ } from './parse-name-status.js';
import { writeBaseExcludes } from './base-ignore.js';
import type { ScopeViolation } from './scope-check.js';

export interface DiffCapture {
  changed: ChangedFile[];
  patchPath: string;
  bytes: number;
  digest: string;
  headCommit: string | null;
  /** The tree of the sandbox's final state (what the patch applied to the base commit yields). */
  tree: string | null;
  /** Changes the scope check refuses whatever the globs say: nested repositories, escaping symlinks. */
  flagged: ScopeViolation[];
}

interface DiffGit {
  call: GitCallOptions;
  cwd: string;
  gitDir: string;
  workTree: string;
  env: Record<string, string>;
}

/** `call` bounds the git calls (timeout, abort signal). */
export async function captureDiff(workDir: string, baseCommit: string, patchPath: string, scratchDir: string, call: GitCallOptions = {}): Promise<DiffCapture> {
  const paths = sandboxPaths(workDir);
  if (!existsSync(paths.gitDir) || !existsSync(paths.index)) {
    throw new UhError('sandbox', `sandbox ${workDir} has no private git dir (${paths.gitDir}): it predates this version of uh`, {
      hint: 'run the mission again in a new sandbox',
    });
  }
  const index = join(scratchDir, 'diff.index');
  const excludes = join(scratchDir, 'base-excludes');
  const list = join(scratchDir, 'untracked.list');
  copyFileSync(paths.index, index);
  const g: DiffGit = { call, cwd: workDir, gitDir: paths.gitDir, workTree: workDir, env: { GIT_INDEX_FILE: index, GIT_LITERAL_PATHSPECS: '1' } };
  const run = (args: string[], extra: { okCodes?: number[] } = {}) => git(args, { ...call, ...extra, cwd: g.cwd, gitDir: g.gitDir, workTree: g.workTree, env: g.env });
  try {
    await writeBaseExcludes(paths.gitDir, baseCommit, excludes, call);
    await run(['add', '--update', '--', '.']);
    const others = (await run(['ls-files', '-z', '--others', `--exclude-from=${excludes}`])).stdout.split('\0').filter(Boolean);
    // A directory listed with a trailing slash is a nested repository: its files would hide in a gitlink.
    const nested = others.filter((p) => p.endsWith('/')).map((p) => p.slice(0, -1));
    const files = others.filter((p) => !p.endsWith('/'));
    if (files.length > 0) {
      writeFileSync(list, `${files.join('\0')}\0`);
      await run(['add', '--force', `--pathspec-from-file=${list}`, '--pathspec-file-nul']);
    }
    const names = await run(['diff', '--cached', '--no-ext-diff', '--name-status', '-z', '-M', baseCommit]);
    await writePatch(g, baseCommit, patchPath);
    // The final tree is what a promotion must reproduce; if git cannot write it, promotion checks the diff digest only.
    const tree = (await run(['write-tree'], { okCodes: [1, 128] })).stdout.trim();
    const changed = [...parseNameStatusZ(names.stdout), ...nested.map((path): ChangedFile => ({ path, status: 'added' }))].sort((a, b) => a.path.localeCompare(b.path));
    return {
      changed,
      patchPath,
      bytes: statSync(patchPath).size,
      digest: await fileDigest(patchPath),
      headCommit: await agentHead(paths.agentGitDir, call),
      tree: /^[0-9a-f]{40,64}$/.test(tree) ? tree : null,
      flagged: [...nested.map((path): ScopeViolation => ({ path, reason: 'nested_repository' })), ...escapingSymlinks(workDir, changed)],
    };
  } finally {
    for (const file of [index, excludes, list]) rmSync(file, { force: true });
  }
}

async function writePatch(g: DiffGit, baseCommit: string, patchPath: string): Promise<void> {
  const child = spawnGroup({
    argv: gitArgv([`--git-dir=${g.gitDir}`, `--work-tree=${g.workTree}`, 'diff', '--cached', '--no-ext-diff', '--no-textconv', '--binary', '-M', baseCommit]),
    cwd: g.cwd,
    env: gitEnv(g.env),
    stdout: { file: patchPath },
    stderr: 'ignore',
    timeoutMs: g.call.timeoutMs ?? GIT_TIMEOUTS_MS.diff,
    ...(g.call.signal ? { signal: g.call.signal } : {}),
  });
  const exit = await child.result;
  if (exit.timedOut || exit.aborted) throw new UhError('sandbox', `git diff ${exit.timedOut ? 'timed out' : 'was aborted'} in ${g.workTree}`, { hint: 'the diff of a very large change can be slow: run again' });
  if (exit.exitCode !== 0) throw new UhError('sandbox', `git diff exited ${exit.exitCode}`);
}

/**
 * The commit the agent's own `.git` says it is on (it may have committed), or null. Read-only
 * and hardened: the agent's config cannot make this run anything.
 */
async function agentHead(agentGitDir: string, call: GitCallOptions): Promise<string | null> {
  if (!existsSync(agentGitDir)) return null;
  const { stdout, code } = await git(['rev-parse', '--verify', '--quiet', 'HEAD'], { ...call, cwd: dirname(agentGitDir), gitDir: agentGitDir, okCodes: [1, 128] }).catch(() => ({ stdout: '', code: -1 }));
  const head = stdout.trim();
  return code === 0 && /^[0-9a-f]{40,64}$/.test(head) ? head : null;
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

export async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}
