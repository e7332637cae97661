/**
 * The base commit's ignore rules as ONE exclude file for `git ls-files --others --exclude-from`:
 * every `.gitignore` of the base tree, its patterns anchored at its own directory, shallow files
 * first so a deeper file's patterns win as they do in git. The worktree's `.gitignore` files (the
 * agent may have added or changed them), `.git/info/exclude` and `core.excludesFile` are never
 * read: no ignore file the agent wrote can hide a change.
 */
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, posix } from 'node:path';
import { UhError } from '../../shared/errors.js';
import { spawnGroup } from '../../shared/process/spawn-group.js';
import { git, gitArgv, gitEnv, GIT_TIMEOUTS_MS, type GitCallOptions } from '../sandbox/git.js';
import { makeDir } from '../../shared/fs/make-dir.js';

/** At most this many `.gitignore` files of the base tree are read (more is not a real repository). */
const MAX_IGNORE_FILES = 2000;
/** Most bytes one `cat-file --batch` of the commit and its ignore files may print. */
const MAX_BATCH_BYTES = 64 * 1024 * 1024;

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

/** Where uh keeps base-commit facts in its cache dir (masked from every sandbox by isolation). */
export function baseFactsDir(cacheDir: string): string {
  return join(cacheDir, 'derived', 'base-facts');
}

/** What the diff needs of the base commit: its root tree and its ignore rules (`anchorIgnoreFiles`). */
export interface BaseFacts {
  tree: string;
  excludes: string;
}

const HEX = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
const CACHE_HEADER = 'uh.base-facts.v1';
/** A cached entry larger than this is not kept (nor read): the facts are computed again. */
const MAX_CACHED_BYTES = 8 * 1024 * 1024;

/**
 * The base commit's tree and ignore rules, read from uh's private git dir: two git processes
 * (`ls-tree`, then one `cat-file --batch` for the commit and every `.gitignore` blob), none when
 * `cacheDir` holds them already. A commit names its content, so an entry per commit never goes
 * stale. `cacheDir` must be uh's own (outside every sandbox: isolation masks the cache dir); an
 * entry that does not parse is ignored and written again.
 */
export async function readBaseFacts(
  gitDir: string,
  baseCommit: string,
  cacheDir: string | null,
  call: GitCallOptions = {},
): Promise<BaseFacts> {
  const cached = cacheDir && HEX.test(baseCommit) ? readCachedFacts(join(cacheDir, baseCommit), baseCommit) : null;
  if (cached) return cached;
  const { stdout } = await git(['ls-tree', '-r', '-z', '--full-tree', baseCommit], { ...call, cwd: gitDir, gitDir });
  const ignoreFiles: Array<{ path: string; sha: string }> = [];
  for (const entry of stdout.split('\0')) {
    // `<mode> blob <sha>\t<path>`
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    const path = entry.slice(tab + 1);
    const [mode, type, sha] = entry.slice(0, tab).split(' ');
    if (type !== 'blob' || mode === '120000' || posix.basename(path) !== '.gitignore' || !sha) continue;
    if (ignoreFiles.length >= MAX_IGNORE_FILES) break;
    ignoreFiles.push({ path, sha });
  }
  const objects = await catFileBatch(gitDir, [baseCommit, ...ignoreFiles.map((f) => f.sha)], call);
  const tree = /^tree ([0-9a-f]{40,64})$/m.exec(objects[0]?.toString('utf8') ?? '')?.[1];
  if (!tree)
    throw new UhError('sandbox', `base commit ${baseCommit} has no readable tree in ${gitDir}`, {
      hint: 'run the mission again in a new sandbox',
    });
  const facts = {
    tree,
    excludes: anchorIgnoreFiles(
      ignoreFiles.map((f, i) => ({ path: f.path, text: objects[i + 1]?.toString('utf8') ?? '' })),
    ),
  };
  if (cacheDir && HEX.test(baseCommit)) writeCachedFacts(cacheDir, baseCommit, facts);
  return facts;
}

function readCachedFacts(file: string, baseCommit: string): BaseFacts | null {
  try {
    if (statSync(file).size > MAX_CACHED_BYTES) return null;
    const text = readFileSync(file, 'utf8');
    const nl = text.indexOf('\n');
    const [header, commit, tree] = text.slice(0, nl).split(' ');
    if (nl < 0 || header !== CACHE_HEADER || commit !== baseCommit || !tree || !HEX.test(tree)) return null;
    return { tree, excludes: text.slice(nl + 1) };
  } catch {
    return null;
  }
}

/** Written whole then renamed: a concurrent reader sees the old file or the new one. False when it cannot be written. */
function writeWhole(dir: string, name: string, text: string): boolean {
  try {
    makeDir(dir);
    const tmp = join(dir, `.${name}.${randomBytes(4).toString('hex')}`);
    writeFileSync(tmp, text);
    renameSync(tmp, join(dir, name));
    return true;
  } catch {
    return false;
  }
}

/** A cache that cannot be written costs two git processes next time, nothing else. */
function writeCachedFacts(cacheDir: string, baseCommit: string, facts: BaseFacts): void {
  const text = `${CACHE_HEADER} ${baseCommit} ${facts.tree}\n${facts.excludes}`;
  if (Buffer.byteLength(text) <= MAX_CACHED_BYTES) writeWhole(cacheDir, baseCommit, text);
}

/**
 * The base commit's ignore rules as a file of their own for `ls-files --exclude-from`, kept beside
 * its facts (a commit's rules never change, so no file is written and removed per diff): its path,
 * rewritten when missing or not exactly `rules`; null when it cannot be kept.
 */
export function keptExcludesFile(cacheDir: string, baseCommit: string, rules: string): string | null {
  if (!HEX.test(baseCommit)) return null;
  const kept = join(cacheDir, `${baseCommit}.exclude`);
  try {
    if (readFileSync(kept, 'utf8') === rules) return kept;
  } catch {
    // not there yet
  }
  return writeWhole(cacheDir, `${baseCommit}.exclude`, rules) ? kept : null;
}

/** The objects named by `names` (raw bytes, one per name, null when missing), by one `git cat-file --batch`. */
async function catFileBatch(
  gitDir: string,
  names: readonly string[],
  call: GitCallOptions,
): Promise<Array<Buffer | null>> {
  const child = spawnGroup({
    argv: gitArgv([`--git-dir=${gitDir}`, 'cat-file', '--batch']),
    cwd: gitDir,
    env: gitEnv(),
    stdin: { text: names.map((n) => `${n}\n`).join('') },
    stdout: 'pipe',
    stderr: 'ignore',
    timeoutMs: call.timeoutMs ?? GIT_TIMEOUTS_MS['cat-file'] ?? 5 * 60_000,
    ...(call.signal ? { signal: call.signal } : {}),
  });
  const chunks: Buffer[] = [];
  let bytes = 0;
  child.stdout?.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > MAX_BATCH_BYTES) child.terminate();
    else chunks.push(chunk);
  });
  const exit = await child.result;
  if (exit.exitCode !== 0 || bytes > MAX_BATCH_BYTES) {
    throw new UhError(
      'sandbox',
      `git cat-file --batch ${exit.timedOut ? 'timed out' : exit.aborted ? 'was aborted' : bytes > MAX_BATCH_BYTES ? 'printed too much' : `exited ${exit.exitCode}`} in ${gitDir}`,
      {
        hint: 'run the mission again; if it keeps failing, remove the sandbox and the mirror',
      },
    );
  }
  return parseBatch(Buffer.concat(chunks), names.length);
}

/** `<sha> <type> <size>\n<content>\n` per object, or `<name> missing\n`. Pure. */
export function parseBatch(out: Buffer, count: number): Array<Buffer | null> {
  const objects: Array<Buffer | null> = [];
  let at = 0;
  while (objects.length < count && at < out.length) {
    const nl = out.indexOf(10, at);
    if (nl < 0) break;
    const header = out.subarray(at, nl).toString('utf8').split(' ');
    const size = Number(header[2]);
    if (header.length !== 3 || !Number.isSafeInteger(size) || nl + 1 + size > out.length) {
      objects.push(null);
      at = nl + 1;
      continue;
    }
    objects.push(out.subarray(nl + 1, nl + 1 + size));
    at = nl + 1 + size + 1;
  }
  while (objects.length < count) objects.push(null);
  return objects;
}
