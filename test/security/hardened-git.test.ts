/**
 * uh's git runner (src/workers/sandbox/git.ts, hardened by src/shared/git-hardening.ts) runs
 * nothing a repository or $HOME plants: no hooks (core.hooksPath), no fsmonitor, no filter
 * driver from the global config, and replace refs do not swap objects. Each plant is shown live
 * first: plain git on the same repository runs it (or sees the replacement). This is the layer
 * under the hostile-git suite (git-attacks.test.ts), where uh's own git dir and the mirror check
 * keep agent-written config from ever being read.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { git as uhGit } from '../../src/workers/sandbox/git.js';
import { git, makeRepo } from '../support/git-repo.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

interface Planted {
  repo: string;
  home: string;
  /** Where each plant leaves its mark when it runs. */
  marks: string;
  /** The commit a replace ref stands in for, and the subject it really has. */
  original: string;
}

function executable(path: string, body: string): string {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** A repository and a $HOME whose config plants a hook, an fsmonitor, a filter and a replace ref. */
function plant(): Planted {
  const root = tempDir('uh-hardened-');
  dirs.push(root);
  const marks = join(root, 'marks');
  const hooks = join(root, 'hooks');
  const home = join(root, 'home');
  for (const dir of [marks, hooks, home]) mkdirSync(dir);
  const files = { 'README.md': '# demo\n', '.gitattributes': '*.g filter=g\n', 'f.g': 'v1\n' };
  const repo = makeRepo(files, join(root, 'repo'));
  const original = git(repo, 'rev-parse', 'HEAD');
  const fake = git(repo, 'commit-tree', `${original}^{tree}`, '-m', 'replaced');
  git(repo, 'replace', original, fake);
  writeFileSync(join(repo, 'f.g'), 'v2\n');
  // Planted last: from here on, any git that honours them leaves a mark.
  for (const hook of ['pre-commit', 'post-commit', 'reference-transaction']) {
    executable(join(hooks, hook), `touch ${marks}/hook-${hook}`);
  }
  git(repo, 'config', 'core.hooksPath', hooks);
  git(repo, 'config', 'core.fsmonitor', executable(join(root, 'fsmonitor'), `touch ${marks}/fsmonitor`));
  writeFileSync(join(home, '.gitconfig'), `[filter "g"]\n\tclean = "touch ${marks}/global-filter; cat"\n`);
  return { repo, home, marks, original };
}

/** What each git user does to a planted repository: status, add the filtered file, commit, read the commit. */
type Git = (args: string[]) => Promise<string>;

async function exercise(run: Git, p: Planted): Promise<{ marks: string[]; subject: string }> {
  await run(['status', '--porcelain']);
  await run(['add', 'f.g']);
  await run(['-c', 'user.name=uh', '-c', 'user.email=uh@uh.invalid', 'commit', '-q', '-m', 'edit']);
  const subject = (await run(['log', '-1', '--format=%s', p.original])).trim();
  return { marks: readdirSync(p.marks).sort(), subject };
}

describe('hardened git', () => {
  it('plain git on the planted repository runs every plant and sees the replacement', async () => {
    const p = plant();
    const env = { ...process.env, HOME: p.home, GIT_CONFIG_NOSYSTEM: '1' };
    const plain: Git = async (args) => execFileSync('git', args, { cwd: p.repo, env, encoding: 'utf8' });
    const seen = await exercise(plain, p);
    const all = ['fsmonitor', 'global-filter', 'hook-post-commit', 'hook-pre-commit', 'hook-reference-transaction'];
    expect(seen.marks).toEqual(all);
    expect(seen.subject).toBe('replaced');
  });

  it("uh's git on the same repository runs none of them and reads the real commit", async () => {
    const p = plant();
    const hardened: Git = async (args) => (await uhGit(args, { cwd: p.repo, env: { HOME: p.home } })).stdout;
    const seen = await exercise(hardened, p);
    expect(seen.marks).toEqual([]);
    expect(seen.subject).toBe('initial');
    expect(existsSync(join(p.repo, '.git', 'refs', 'replace', p.original))).toBe(true);
  });
});
