import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tempDir } from './temp.js';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'uh test',
  GIT_AUTHOR_EMAIL: 'test@uh.invalid',
  GIT_COMMITTER_NAME: 'uh test',
  GIT_COMMITTER_EMAIL: 'test@uh.invalid',
  // The tests' own git also reads repositories a fleet gave to another user (test/support/fleet.ts).
  GIT_CONFIG_COUNT: '1',
  GIT_CONFIG_KEY_0: 'safe.directory',
  GIT_CONFIG_VALUE_0: '*',
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A real git repository in a temp dir with the given files committed on `main`. */
export function makeRepo(files: Record<string, string> = { 'README.md': '# demo\n' }, root?: string): string {
  const dir = root ?? tempDir('uh-repo-');
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'initial');
  return dir;
}

/** Everything a user would notice about their checkout: status, index, HEAD, branches, stash. */
export function checkoutFingerprint(dir: string): string {
  return [
    git(dir, 'status', '--porcelain=v2', '--branch', '--untracked-files=all', '--ignored'),
    git(dir, 'ls-files', '--stage'),
    git(dir, 'rev-parse', 'HEAD'),
    git(dir, 'for-each-ref', '--format=%(refname) %(objectname)'),
    git(dir, 'stash', 'list'),
    git(dir, 'worktree', 'list', '--porcelain'),
  ].join('\n---\n');
}
