/**
 * `git add --all --force` of the diff capture's listed paths, done by git in time linear in their
 * number. `git add` (and `git rm`) match every path of the tree against every pathspec, so staging
 * N listed paths that way is quadratic: 40,000 new files took 27 s to stage, 133,000 longer than
 * any mission. `git update-index --add --remove --replace -z --stdin` reads the same paths
 * NUL-separated on stdin and finds each in the index by binary search: 0.6 s for the 40,000.
 *
 * What `add --all --force` stores, `update-index` stores too (the same hashing, attributes and
 * modes), given the paths in byte order (a directory that replaced a tracked file is removed
 * before the files in it are added; a file that replaced a directory is added, `--replace`
 * dropping the directory's entries, before them) and with two refusals of git's own kept closed:
 * - a path beyond a symbolic link (a tracked directory the agent replaced by a link) fails
 *   `update-index` as it fails `add`; its index entry is dropped first, by
 *   `update-index --force-remove` (one more process, only then), as `add --all` of the whole
 *   tree would drop it;
 * - a path git will not store (`.GIT/x`, a name `verify_path` refuses) is skipped by
 *   `update-index` with "Ignoring path" where `add` fails: here it fails, so no file the agent
 *   wrote can leave the diff quietly. So does a listed name that is not UTF-8 (the listing's
 *   decoding replaced a byte with U+FFFD, so no such path exists): `update-index --remove` would
 *   take it for a deletion and drop nothing.
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { UhError } from '../../shared/errors.js';

/** A git runner over uh's private git dir, the worktree and the scratch index. */
export type StagingGit = (
  args: string[],
  extra: { input: string; stderrFails?: string },
) => Promise<{ stdout: string }>;

const IGNORED = 'Ignoring path ';

/** Stage exactly the listed paths (modified, deleted and untracked) into the scratch index. */
export async function stageWithGit(run: StagingGit, workDir: string, paths: readonly string[]): Promise<void> {
  const sorted = [...paths].sort();
  const beyond = beyondSymlink(workDir, sorted);
  for (const path of sorted)
    if (path.includes('\uFFFD') && !beyond.has(path) && !exists(join(workDir, path))) {
      throw new UhError('sandbox', `the diff lists a path whose name is not UTF-8 (read as "${path}")`, {
        hint: 'the agent wrote a file name uh cannot name in a receipt: remove or rename it, then run again',
      });
    }
  const nul = (list: readonly string[]) => `${list.join('\0')}\0`;
  if (beyond.size > 0) await run(['update-index', '--force-remove', '-z', '--stdin'], { input: nul([...beyond]) });
  const rest = beyond.size > 0 ? sorted.filter((p) => !beyond.has(p)) : sorted;
  if (rest.length === 0) return;
  try {
    await run(['update-index', '--add', '--remove', '--replace', '-z', '--stdin'], {
      input: nul(rest),
      stderrFails: IGNORED,
    });
  } catch (error) {
    const said = error instanceof Error ? error.message : '';
    const at = said.indexOf(IGNORED);
    if (at < 0) throw error;
    throw new UhError('sandbox', `the agent wrote a path git will not store: ${said.slice(at + IGNORED.length)}`, {
      hint: 'names such as .git (in any case) or .. cannot be committed: remove it from the sandbox, then run again',
      cause: error,
    });
  }
}

function exists(full: string): boolean {
  return lstatSync(full, { throwIfNoEntry: false }) !== undefined;
}

/** The paths with a symbolic link among their parent directories; one lstat per directory. */
function beyondSymlink(workDir: string, paths: readonly string[]): Set<string> {
  const linked = new Map<string, boolean>();
  const isLink = (dir: string): boolean => {
    let link = linked.get(dir);
    if (link === undefined) {
      try {
        link = lstatSync(join(workDir, dir), { throwIfNoEntry: false })?.isSymbolicLink() === true;
      } catch {
        link = false; // ENOTDIR: a file on the way; update-index takes the path for a deletion
      }
      linked.set(dir, link);
    }
    return link;
  };
  const out = new Set<string>();
  for (const path of paths) {
    for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
      if (isLink(path.slice(0, slash))) {
        out.add(path);
        break;
      }
    }
  }
  return out;
}
