/**
 * The worktree's `.git`, as uh made it, before the diff and the checks (docs/security.md
 * "Hostile check"). The agent may replace `.git` with a gitfile (`gitdir: /`), a symlink or
 * anything else: uh never reads it to decide what a phase may see, and puts its own back
 * (`restoreGitLink`). Any other entry named `.git` in the tree is a nested repository, a
 * scope violation (`strayGitEntries`). Nothing is followed: symlinks are looked at as links.
 */
import { lstatSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sandboxPaths, writeAgentGitDir, type Sandbox } from './worktree.js';

/**
 * Put the agent's git dir back when `.git` at the top is not a real directory (a gitfile, a
 * symlink, a FIFO, missing). Returns what was there when it was replaced, else null.
 */
export function restoreGitLink(sandbox: Pick<Sandbox, 'path' | 'mirror' | 'commit'>): string | null {
  const paths = sandboxPaths(sandbox.path);
  let found: string;
  try {
    const st = lstatSync(paths.agentGitDir);
    if (st.isDirectory()) return null;
    found = st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : 'special file';
  } catch {
    found = 'missing';
  }
  rmSync(paths.agentGitDir, { recursive: true, force: true });
  writeAgentGitDir(paths, sandbox.mirror, sandbox.commit);
  return found;
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
