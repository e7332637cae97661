/**
 * The base commit's ignore rules as ONE exclude file for `git ls-files --others --exclude-from`:
 * every `.gitignore` of the base tree, its patterns anchored at its own directory, shallow files
 * first so a deeper file's patterns win as they do in git. The worktree's `.gitignore` files (the
 * agent may have added or changed them), `.git/info/exclude` and `core.excludesFile` are never
 * read: no ignore file the agent wrote can hide a change.
 */
import { writeFileSync } from 'node:fs';
import { posix } from 'node:path';
import { git, type GitCallOptions } from '../sandbox/git.js';

/** At most this many `.gitignore` files of the base tree are read (more is not a real repository). */
const MAX_IGNORE_FILES = 2000;

/**
 * One line of a `.gitignore` in `dir` (posix, '' for the top) as a top-level pattern. Pure.
 * A pattern with a slash at its start or middle is relative to its file's directory; one
 * without may match at any depth below that directory.
 */
export function anchorIgnoreLine(dir: string, raw: string): string | null {
  const line = raw.replace(/\r$/, '').replace(/(?<!\\)\s+$/, '');
  if (line === '' || line.startsWith('#')) return null;
  if (dir === '') return line;
  const negated = line.startsWith('!');
  const body = negated ? line.slice(1) : line;
  const dirOnly = body.endsWith('/');
  const core = dirOnly ? body.slice(0, -1) : body;
  if (core === '') return null;
  const anchored = core.includes('/') ? `/${dir}/${core.replace(/^\//, '')}` : `/${dir}/**/${core}`;
  return `${negated ? '!' : ''}${anchored}${dirOnly ? '/' : ''}`;
}

/** The lines of every base `.gitignore`, anchored and ordered (shallow first). Pure. */
export function anchorIgnoreFiles(files: ReadonlyArray<{ path: string; text: string }>): string {
  const depth = (p: string) => p.split('/').length;
  const sorted = [...files].sort((a, b) => depth(a.path) - depth(b.path) || (a.path < b.path ? -1 : 1));
  const out: string[] = [];
  for (const file of sorted) {
    const dir = posix.dirname(file.path) === '.' ? '' : posix.dirname(file.path);
    for (const raw of file.text.split('\n')) {
      const line = anchorIgnoreLine(dir, raw);
      if (line !== null) out.push(line);
    }
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

/** Write the base commit's ignore rules to `outPath`, read from uh's private git dir. */
export async function writeBaseExcludes(gitDir: string, baseCommit: string, outPath: string, call: GitCallOptions = {}): Promise<void> {
  const { stdout } = await git(['ls-tree', '-r', '-z', '--full-tree', baseCommit], { ...call, cwd: gitDir, gitDir });
  const files: Array<{ path: string; text: string }> = [];
  for (const entry of stdout.split('\0')) {
    // `<mode> blob <sha>\t<path>`
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    const path = entry.slice(tab + 1);
    const [mode, type, sha] = entry.slice(0, tab).split(' ');
    if (type !== 'blob' || mode === '120000' || posix.basename(path) !== '.gitignore' || !sha) continue;
    if (files.length >= MAX_IGNORE_FILES) break;
    const blob = await git(['cat-file', 'blob', sha], { ...call, cwd: gitDir, gitDir, maxBuffer: 4 * 1024 * 1024 });
    files.push({ path, text: blob.stdout });
  }
  writeFileSync(outPath, anchorIgnoreFiles(files));
}
