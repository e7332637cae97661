/**
 * The JS ref reader against git itself: every layout is a real repository built with real git
 * commands, and `readLocalRef` must print what `git rev-parse --verify <ref>^{commit}` prints
 * there (run through uh's own hardened git runner, as `resolveInMirror` runs it), or null where
 * it must leave the answer to git. Through `resolveInMirror`, the JS answer saves the process.
 */
import { chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { readLocalRef, parsePackedRefs } from '../../../src/workers/sandbox/local-ref.js';
import { resolveInMirror } from '../../../src/workers/sandbox/mirror-cache.js';
import { git as hardenedGit } from '../../../src/workers/sandbox/git.js';
import { spawnCounts } from '../../../src/shared/process/spawn-group.js';
import { git, makeRepo } from '../../support/git-repo.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function repo(files?: Record<string, string>): string {
  const dir = makeRepo(files);
  dirs.push(dir);
  return dir;
}

function commit(dir: string, message: string): string {
  git(dir, 'commit', '-q', '--allow-empty', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

/** What the git fallback answers: the commit, or null where it fails. */
async function gitAnswer(dir: string, ref: string): Promise<string | null> {
  const { stdout, code } = await hardenedGit(
    ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`],
    { cwd: dir, okCodes: [1, 128] },
  );
  return code === 0 ? stdout.trim() : null;
}

/** The JS path answers, and with git's answer. */
async function expectAnswered(dir: string, ref: string): Promise<string> {
  const answer = readLocalRef(dir, ref);
  expect(answer, `${ref} in ${dir}`).not.toBeNull();
  expect(answer).toBe(await gitAnswer(dir, ref));
  return answer as string;
}

/** The JS path leaves it to git; `git` says what git then answers (a commit, or null). */
async function expectLeftToGit(dir: string, ref: string, git: 'answers' | 'fails'): Promise<void> {
  expect(readLocalRef(dir, ref), `${ref} in ${dir}`).toBeNull();
  const answer = await gitAnswer(dir, ref);
  if (git === 'answers') expect(answer).toMatch(/^[0-9a-f]{40}$/);
  else expect(answer).toBeNull();
}

const gitSpawns = () =>
  Object.entries(spawnCounts())
    .filter(([k]) => k.startsWith('git '))
    .reduce((n, [, v]) => n + v, 0);

describe('readLocalRef: answered, equal to git', () => {
  it('HEAD on a branch and the branch, loose, by short and full name', async () => {
    const dir = repo();
    const head = await expectAnswered(dir, 'HEAD');
    expect(await expectAnswered(dir, 'main')).toBe(head);
    expect(await expectAnswered(dir, 'refs/heads/main')).toBe(head);
    expect(existsSync(join(dir, '.git', 'refs', 'heads', 'main'))).toBe(true);
  });

  it('a detached HEAD', async () => {
    const dir = repo();
    const first = git(dir, 'rev-parse', 'HEAD');
    commit(dir, 'two');
    git(dir, 'checkout', '-q', '--detach', first);
    expect(readFileSync(join(dir, '.git', 'HEAD'), 'utf8')).toBe(`${first}\n`);
    expect(await expectAnswered(dir, 'HEAD')).toBe(first);
  });

  it('a branch only in packed-refs, and a loose ref newer than its packed line', async () => {
    const dir = repo();
    git(dir, 'branch', 'packed');
    git(dir, 'pack-refs', '--all');
    expect(existsSync(join(dir, '.git', 'refs', 'heads', 'packed'))).toBe(false);
    const packedAt = await expectAnswered(dir, 'packed');
    const newer = commit(dir, 'newer'); // main: loose again, packed-refs still holds the old id
    expect(readFileSync(join(dir, '.git', 'packed-refs'), 'utf8')).toContain(`${packedAt} refs/heads/main`);
    expect(await expectAnswered(dir, 'main')).toBe(newer);
    expect(await expectAnswered(dir, 'HEAD')).toBe(newer);
  });

  it('every object packed (git gc): the commit is read from the pack', async () => {
    const dir = repo();
    const tip = commit(dir, 'two');
    git(dir, 'gc', '-q');
    expect(existsSync(join(dir, '.git', 'objects', tip.slice(0, 2), tip.slice(2)))).toBe(false);
    expect(await expectAnswered(dir, 'main')).toBe(tip);
  });

  it('a branch with a slash, by short and full name; a symbolic ref to a branch', async () => {
    const dir = repo();
    git(dir, 'checkout', '-q', '-b', 'feature/x');
    const tip = commit(dir, 'feature');
    expect(await expectAnswered(dir, 'feature/x')).toBe(tip);
    expect(await expectAnswered(dir, 'refs/heads/feature/x')).toBe(tip);
    git(dir, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/feature/x');
    expect(await expectAnswered(dir, 'alias')).toBe(tip);
  });

  it('a bare repository (refs and objects packed by the clone)', async () => {
    const source = repo();
    const bare = join(tempDir('uh-bare-'), 'b.git');
    dirs.push(bare);
    git(source, 'clone', '-q', '--bare', '--no-local', source, bare);
    const tip = git(source, 'rev-parse', 'HEAD');
    expect(await expectAnswered(bare, 'main')).toBe(tip);
    expect(await expectAnswered(bare, 'HEAD')).toBe(tip);
  });

  it('a shallow clone, as CI checks out (depth 1, a shallow file, objects in a pack)', async () => {
    const source = repo();
    commit(source, 'two');
    const shallow = join(tempDir('uh-shallow-'), 's');
    dirs.push(shallow);
    git(source, 'clone', '-q', '--depth', '1', `file://${source}`, shallow);
    expect(existsSync(join(shallow, '.git', 'shallow'))).toBe(true);
    expect(await expectAnswered(shallow, 'main')).toBe(git(source, 'rev-parse', 'main'));
    expect(await expectAnswered(shallow, 'HEAD')).toBe(git(source, 'rev-parse', 'main'));
  });

  it('a linked worktree: its own HEAD, branches from the common dir', async () => {
    const dir = repo();
    const wt = join(tempDir('uh-wt-'), 'wt');
    dirs.push(wt);
    git(dir, 'worktree', 'add', '-q', '-b', 'side', wt);
    const side = commit(wt, 'on side');
    expect(readFileSync(join(wt, '.git'), 'utf8')).toMatch(/^gitdir: /);
    expect(await expectAnswered(wt, 'HEAD')).toBe(side);
    expect(await expectAnswered(wt, 'main')).toBe(git(dir, 'rev-parse', 'main'));
    expect(await expectAnswered(dir, 'side')).toBe(side);
  });

  it('a sha256 repository', async () => {
    const dir = tempDir('uh-sha256-');
    dirs.push(dir);
    git(dir, 'init', '-q', '--object-format=sha256', '-b', 'main');
    const tip = commit(dir, 'one');
    expect(tip).toMatch(/^[0-9a-f]{64}$/);
    expect(await expectAnswered(dir, 'main')).toBe(tip);
    git(dir, 'gc', '-q');
    expect(await expectAnswered(dir, 'HEAD')).toBe(tip);
  });
});

describe('readLocalRef: left to git', () => {
  it('a tag and a branch of the same name (git picks the tag), an annotated tag, a lightweight tag', async () => {
    const dir = repo();
    const first = git(dir, 'rev-parse', 'HEAD');
    git(dir, 'tag', 'same');
    git(dir, 'branch', 'same');
    commit(dir, 'two');
    git(dir, 'branch', '-f', 'same');
    await expectLeftToGit(dir, 'same', 'answers');
    expect(await gitAnswer(dir, 'same')).toBe(first); // the tag, not the branch
    git(dir, 'tag', '-a', 'v1', '-m', 'annotated');
    await expectLeftToGit(dir, 'v1', 'answers');
    await expectLeftToGit(dir, 'refs/tags/v1', 'answers');
    git(dir, 'tag', 'light');
    await expectLeftToGit(dir, 'light', 'answers');
  });

  it('two candidates: a branch and a remote-tracking ref of the same name (git takes the branch and warns)', async () => {
    const dir = repo();
    git(dir, 'update-ref', 'refs/remotes/both', 'HEAD');
    git(dir, 'branch', 'both');
    await expectLeftToGit(dir, 'both', 'answers');
    git(dir, 'update-ref', '-d', 'refs/remotes/both');
    await expectAnswered(dir, 'both');
  });

  it('a nonexistent ref, and through resolveInMirror still the repository.ref error', async () => {
    const dir = repo();
    await expectLeftToGit(dir, 'nope', 'fails');
    const cacheDir = tempDir('uh-mirror-');
    dirs.push(cacheDir);
    await expect(resolveInMirror(cacheDir, dir, 'nope')).rejects.toThrow(
      /^repository\.ref: "nope" is not a branch, tag or commit of /,
    );
  });

  it('HEAD on an unborn branch', async () => {
    const dir = tempDir('uh-unborn-');
    dirs.push(dir);
    git(dir, 'init', '-q', '-b', 'main');
    await expectLeftToGit(dir, 'HEAD', 'fails');
    await expectLeftToGit(dir, 'main', 'fails');
  });

  it('a reftable repository (made by git when it can, else by hand)', async () => {
    const dir = tempDir('uh-reftable-');
    dirs.push(dir);
    let made = false;
    try {
      git(dir, 'init', '-q', '--ref-format=reftable', '-b', 'main');
      commit(dir, 'one');
      made = true;
    } catch {
      // git before 2.45: no reftable; the hand-made layout below is what such a repository looks like.
    }
    if (made) {
      expect(readLocalRef(dir, 'main')).toBeNull();
      expect(readLocalRef(dir, 'HEAD')).toBeNull();
    }
    const byHand = repo();
    const config = readFileSync(join(byHand, '.git', 'config'), 'utf8').replace(
      'repositoryformatversion = 0',
      'repositoryformatversion = 1',
    );
    writeFileSync(join(byHand, '.git', 'config'), `${config}[extensions]\n\trefStorage = reftable\n`);
    expect(readLocalRef(byHand, 'main')).toBeNull(); // the loose files would still answer: the config must stop it
    writeFileSync(join(byHand, '.git', 'HEAD'), 'ref: refs/heads/.invalid\n');
    expect(readLocalRef(byHand, 'HEAD')).toBeNull();
  });

  it('a repository owned by another uid (git refuses it: dubious ownership)', async () => {
    const dir = repo();
    const main = readLocalRef(dir, 'main');
    expect(main).not.toBeNull();
    const uid = (process.geteuid?.() ?? 0) + 4242;
    chownSync(dir, uid, uid);
    await expectLeftToGit(dir, 'main', 'fails');
    chownSync(dir, process.geteuid?.() ?? 0, process.getegid?.() ?? 0);
    chownSync(join(dir, '.git'), uid, uid);
    await expectLeftToGit(dir, 'main', 'fails');
  });

  it('a submodule (its git dir names core.worktree), a root ref before the branch, a dangling symref before the branch', async () => {
    const sub = repo();
    const top = repo();
    git(top, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub, 'sub');
    await expectLeftToGit(join(top, 'sub'), 'HEAD', 'answers');
    const dir = repo();
    const first = git(dir, 'rev-parse', 'HEAD');
    git(dir, 'branch', 'dup');
    commit(dir, 'two');
    git(dir, 'branch', '-f', 'dup');
    writeFileSync(join(dir, '.git', 'dup'), `${first}\n`); // $GIT_DIR/dup comes first in git's order
    await expectLeftToGit(dir, 'dup', 'answers');
    expect(await gitAnswer(dir, 'dup')).toBe(first);
    git(dir, 'branch', 'dangle');
    writeFileSync(join(dir, '.git', 'refs', 'tags', 'dangle'), 'ref: refs/heads/gone\n');
    await expectLeftToGit(dir, 'dangle', 'answers'); // git warns and takes the branch
  });

  it('a branch written by hand to a blob, and a commit object that does not hash to its id', async () => {
    const dir = repo();
    const blob = git(dir, 'hash-object', '-w', 'README.md');
    writeFileSync(join(dir, '.git', 'refs', 'heads', 'blobby'), `${blob}\n`);
    await expectLeftToGit(dir, 'blobby', 'fails');
    const tip = commit(dir, 'to be damaged');
    const object = join(dir, '.git', 'objects', tip.slice(0, 2), tip.slice(2));
    const body = `tree ${git(dir, 'rev-parse', 'HEAD^{tree}')}\n\nnot the commit\n`;
    writeFileSync(object, deflateSync(Buffer.from(`commit ${body.length}\0${body}`)));
    await expectLeftToGit(dir, 'main', 'fails');
  });

  it("a commit the caller knows (uh's mirror holds it) is not read from the source", () => {
    const dir = repo();
    const tip = git(dir, 'rev-parse', 'main');
    // The source's object made unreadable: only the caller's knowledge can vouch for the id now.
    writeFileSync(join(dir, '.git', 'objects', tip.slice(0, 2), tip.slice(2)), 'not zlib');
    expect(readLocalRef(dir, 'main')).toBeNull();
    expect(readLocalRef(dir, 'main', (id) => id === tip)).toBe(tip);
    expect(readLocalRef(dir, 'main', () => false)).toBeNull();
  });

  it('names the JS path never reads', () => {
    const dir = repo();
    const tip = git(dir, 'rev-parse', 'HEAD');
    for (const ref of [
      'main^',
      'main~1',
      'main@{0}',
      '@',
      'HEAD:README.md',
      'main..main',
      ' main',
      '-main',
      'refs/heads/',
      tip,
      'bisect/x',
      'main.lock',
    ]) {
      expect(readLocalRef(dir, ref), ref).toBeNull();
    }
    expect(readLocalRef(join(dir, 'nowhere'), 'main')).toBeNull();
    mkdirSync(join(dir, 'sub'));
    expect(readLocalRef(join(dir, 'sub'), 'main')).toBeNull(); // git would find the repository above
  });
});

describe('parsePackedRefs', () => {
  const a = 'a'.repeat(40);
  const b = 'b'.repeat(40);
  it.each([
    ['empty', '', {}],
    [
      'header, peeled line',
      `# pack-refs with: peeled fully-peeled sorted \n${a} refs/heads/main\n${b} refs/tags/v1\n^${a}\n`,
      { 'refs/heads/main': a, 'refs/tags/v1': b },
    ],
    ['unsorted without the trait', `${a} refs/heads/z\n${b} refs/heads/a\n`, { 'refs/heads/z': a, 'refs/heads/a': b }],
  ])('%s', (_what, text, refs) => {
    expect(Object.fromEntries(parsePackedRefs(text, 40) ?? [])).toEqual(refs);
  });
  it.each([
    ['unsorted despite the trait', `# pack-refs with: sorted \n${a} refs/heads/z\n${b} refs/heads/a\n`],
    ['no final newline', `${a} refs/heads/main`],
    ['a name twice', `${a} refs/heads/main\n${b} refs/heads/main\n`],
    ['a peeled line first', `^${a}\n`],
    ['another header', `# something else\n${a} refs/heads/main\n`],
    ['a short id', `${a.slice(1)} refs/heads/main\n`],
    ['a name outside refs/', `${a} HEAD\n`],
  ])('%s: null', (_what, text) => {
    expect(parsePackedRefs(text, 40)).toBeNull();
  });
});

describe('resolveInMirror on a local repository', () => {
  it('a branch resolves with no git process once the mirror is warm; a tag still asks git once', async () => {
    const dir = repo();
    const cacheDir = tempDir('uh-mirror-');
    dirs.push(cacheDir);
    const tip = git(dir, 'rev-parse', 'main');
    await resolveInMirror(cacheDir, dir, 'main'); // clones the mirror
    await resolveInMirror(cacheDir, dir, 'main'); // verifies and stamps its config
    const before = gitSpawns();
    expect((await resolveInMirror(cacheDir, dir, 'main')).commit).toBe(tip);
    expect((await resolveInMirror(cacheDir, dir, 'HEAD')).commit).toBe(tip);
    expect(gitSpawns()).toBe(before);

    git(dir, 'tag', 'v1');
    const revParses = spawnCounts()['git rev-parse'] ?? 0;
    expect((await resolveInMirror(cacheDir, dir, 'v1')).commit).toBe(tip);
    expect(spawnCounts()['git rev-parse']).toBe(revParses + 1); // the source's rev-parse; the mirror knows the commit
  });
});
