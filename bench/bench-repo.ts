/**
 * A generated benchmark repository, made once and kept under the bench's own cache
 * (`.cache/bench/repos/<key>/`), because a 50,000-file repository takes a while to write and
 * commit. `<key>` is a digest of what decides the content: the generator's source text
 * (`makeRepo`), the file count and the bytes per file. A cached copy is reused only when its
 * record names that key and its HEAD is the commit it recorded, with a clean worktree and no
 * worktrees left registered by an interrupted run; else it is generated again.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeRepo } from './inline-vs-floor.js';

// Compiled to dist/bench/: the repository root is two levels up.
const CACHE = fileURLToPath(new URL('../../.cache/bench/repos/', import.meta.url));

interface RepoRecord {
  key: string;
  files: number;
  bytes_per_file: number;
  commit: string;
  made_at: string;
}

const gitOut = (repo: string, ...args: string[]) =>
  execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** The content key of a generated repository. Pure. */
export function repoKey(files: number, bytesPerFile: number): string {
  return createHash('sha256').update(`${makeRepo.toString()}\0${files}\0${bytesPerFile}`).digest('hex').slice(0, 16);
}

/** Why the cached copy at `dir` cannot be reused, or null when it can. */
function staleness(dir: string, key: string): string | null {
  let record: RepoRecord;
  try {
    record = JSON.parse(readFileSync(join(dir, 'repo.json'), 'utf8')) as RepoRecord;
  } catch {
    return 'no record';
  }
  if (record.key !== key) return 'another key';
  const repo = join(dir, 'repo');
  try {
    gitOut(repo, 'worktree', 'prune'); // a floor cycle an interrupted run left registered
    if (gitOut(repo, 'rev-parse', 'HEAD') !== record.commit) return 'HEAD moved';
    if (gitOut(repo, 'status', '--porcelain', '--untracked-files=all') !== '') return 'worktree not clean';
  } catch (error) {
    return `unreadable: ${(error as Error).message.split('\n')[0]}`;
  }
  return null;
}

/**
 * The real path of a repository of `files` generated files of `bytesPerFile` bytes plus README.md,
 * from the cache when its key matches, else generated now (and cached). `log` hears which.
 */
export function cachedRepo(files: number, bytesPerFile: number, log: (line: string) => void = console.log): string {
  const key = repoKey(files, bytesPerFile);
  const dir = join(CACHE, `${files}-${key}`);
  const why = existsSync(dir) ? staleness(dir, key) : 'none cached';
  if (why === null) {
    log(`repository: ${files + 1} files from the bench cache (${dir}, key ${key})`);
    return realpathSync(join(dir, 'repo'));
  }
  const t0 = performance.now();
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const made = makeRepo(tmp, files, bytesPerFile);
  const record: RepoRecord = {
    key,
    files,
    bytes_per_file: bytesPerFile,
    commit: gitOut(made, 'rev-parse', 'HEAD'),
    made_at: new Date().toISOString(),
  };
  renameSync(made, join(tmp, 'repo'));
  writeFileSync(join(tmp, 'repo.json'), `${JSON.stringify(record, null, 2)}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  log(
    `repository: ${files + 1} files generated in ${((performance.now() - t0) / 1000).toFixed(1)} s (${why}; cached as ${dir})`,
  );
  // Real: the sandbox hides the mission's repository path, and bwrap cannot make a mount point under a symlink (.cache in a worktree).
  return realpathSync(join(dir, 'repo'));
}
