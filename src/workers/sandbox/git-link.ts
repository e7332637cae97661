/**
 * The worktree's `.git`, as uh made it, before the diff and the checks (docs/security.md
 * "Hostile check"). The agent may replace `.git` with a gitfile (`gitdir: /`), a symlink or
 * anything else: uh never reads it to decide what a phase may see, and puts its own back
 * (`restoreGitLink`). Any other entry named `.git` in the tree is a nested repository, a
 * scope violation (`strayGitEntries`). Nothing is followed: symlinks are looked at as links.
 */
import { lstatSync, readdirSync, readFileSync, rmSync, writeFileSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { makeDir } from '../../shared/fs/make-dir.js';
import type { Mirror } from './mirror-cache.js';
import { gitDirSpec, sandboxPaths, writeAgentGitDir, type SandboxPaths } from './worktree.js';

/** What the restore needs of a sandbox: its worktree, its mirror and its base commit. */
export interface GitLinkOf {
  path: string;
  mirror: Pick<Mirror, 'path'>;
  commit: string;
}

/**
 * Put the agent's git dir back when `.git` at the top is not a real directory (a gitfile, a
 * symlink, a FIFO, missing). Returns what was there when it was replaced, else null.
 */
export function restoreGitLink(sandbox: GitLinkOf, paths: SandboxPaths = sandboxPaths(sandbox.path)): string | null {
  let found: string;
  try {
    const st = lstatSync(paths.agentGitDir);
    if (st.isDirectory()) return repointGitDir(paths.agentGitDir, sandbox);
    found = st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : 'special file';
  } catch {
    found = 'missing';
  }
  rmSync(paths.agentGitDir, { recursive: true, force: true });
  writeAgentGitDir(paths, sandbox.mirror, sandbox.commit);
  return found;
}

/**
 * A real `.git` directory keeps the agent's own HEAD and objects, but reads no other git dir than
 * uh's mirror: a `commondir` is removed and `objects/info/alternates` written back as uh made it.
 */
function repointGitDir(gitDir: string, sandbox: GitLinkOf): string | null {
  const alternates = join(gitDir, 'objects', 'info', 'alternates');
  const want = `${gitDirSpec(sandbox.mirror, sandbox.commit, false).alternates}\n`;
  const found: string[] = [];
  if (lstatOrNull(join(gitDir, 'commondir')) !== null) found.push('commondir');
  const st = lstatOrNull(alternates);
  if (st === null || !st.isFile() || readFileSync(alternates, 'utf8') !== want) found.push('alternates');
  if (found.length === 0) return null;
  rmSync(join(gitDir, 'commondir'), { recursive: true, force: true });
  rmSync(alternates, { recursive: true, force: true });
  rmSync(join(gitDir, 'objects', 'info'), { recursive: true, force: true });
  makeDir(join(gitDir, 'objects', 'info'));
  writeFileSync(alternates, want);
  return found.join(', ');
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** Every entry named `.git` below the top of `worktree` (relative paths, sorted), the top one excepted. */
export function strayGitEntries(worktree: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string): void => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names.sort()) {
      const path = rel === '' ? name : `${rel}/${name}`;
      if (name === '.git') {
        if (rel !== '') out.push(path);
        continue;
      }
      if (isDirectory(join(dir, name))) walk(join(dir, name), path);
    }
  };
  walk(worktree, '');
  return out;
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}
