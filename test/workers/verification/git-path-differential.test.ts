/**
 * The git fast path proves itself against git: both implementations of `GitPath`
 * (src/workers/git-path.ts) run over a generated corpus of bases and agent changes, and must give
 * the same diff capture: the same names, tree, patch bytes, digest and flags. `GIT_PROCESSES`
 * asks git every question; `IN_PROCESS_GIT` answers the ones it is sure of. The corpus: edits of
 * the same size within the second of the checkout, the x bit set and cleared, symlinks added,
 * retargeted and put where a file was, ignore rules (in the subset `ignore-rules.ts` takes, and a
 * negation it refuses), `.gitattributes` (eol, text=auto, binary), CRLF content, deletes,
 * renames, deep paths, a directory replaced by a file and a file by a directory, a `.gitignore`
 * the agent rewrote, names git quotes, a nested repository, an edit whose mtime was put back, and
 * no change at all. The fast path must also have answered without git in part of it (else the test
 * would compare git with itself). Local refs: `IN_PROCESS_GIT.localRef` must name git's commit
 * whenever it answers (loose and packed refs, tags, branches, a missing name).
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GIT_PROCESSES, IN_PROCESS_GIT, type GitPath } from '../../../src/workers/git-path.js';
import { resolveInMirror } from '../../../src/workers/sandbox/mirror-cache.js';
import { createSandbox, sandboxPaths } from '../../../src/workers/sandbox/worktree.js';
import { captureDiff } from '../../../src/workers/verification/capture-diff.js';
import { readBaseFacts } from '../../../src/workers/verification/base-ignore.js';
import { git } from '../../support/git-repo.js';
import { gitProcesses, seeded } from '../../support/spawned.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const IGNORES = ['', '*.log\n/build\nsrc/gen/\n', '*.log\n!keep.log\n'];
const ATTRIBUTES = [null, null, '*.txt text eol=lf\n', '* text=auto\n', '*.dat binary\n'];

type Edit = (root: string, rnd: () => number) => void;

const write = (root: string, path: string, body: string | Buffer) => {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), body);
};
const replaceWithLink = (root: string, path: string, target: string) => {
  rmSync(join(root, path), { recursive: true, force: true });
  mkdirSync(dirname(join(root, path)), { recursive: true });
  symlinkSync(target, join(root, path));
};

/** What an agent does to its sandbox; each runs right after the checkout (within its second, mostly). */
const EDITS: Record<string, Edit> = {
  'same-size edit': (r) => writeFileSync(join(r, 'README.md'), '# two\n'),
  'same-size deep edit': (r) =>
    existsSync(join(r, 'a/b/c/d/e/f/g/deep.txt')) && write(r, 'a/b/c/d/e/f/g/deep.txt', 'DEEP\n'),
  'x bit set': (r) => existsSync(join(r, 'src/app.ts')) && chmodSync(join(r, 'src/app.ts'), 0o755),
  'x bit cleared': (r) => chmodSync(join(r, 'run.sh'), 0o644),
  'symlink retargeted': (r) => replaceWithLink(r, 'link', 'src/app.ts'),
  'symlink where a file was': (r) => replaceWithLink(r, 'crlf.txt', 'README.md'),
  'new symlink': (r) => replaceWithLink(r, 'new-link', '../outside'),
  'ignored files added': (r) => {
    write(r, 'x.log', 'log\n');
    write(r, 'build/out.txt', 'out\n');
    write(r, 'src/gen/g.ts', 'g\n');
    write(r, 'keep.log', 'kept?\n');
  },
  'plain files added': (r, rnd) => {
    write(r, 'new.txt', `n ${Math.floor(rnd() * 100)}\n`);
    write(r, 'p/q/r/s/t/u/v/w.txt', 'deep new\n');
  },
  'CRLF edits': (r) => {
    write(r, 'crlf.txt', 'l1\r\nl2 changed\r\n');
    write(r, 'win.txt', 'a\r\nb\r\n');
  },
  'binary added': (r) => write(r, 'blob.dat', Buffer.from([0, 1, 2, 0x0d, 0x0a, 3])),
  delete: (r) => rmSync(join(r, 'src/app.ts'), { force: true }),
  rename: (r) => {
    const from = join(r, 'docs/guide.md');
    if (!existsSync(from)) return;
    write(r, 'moved/guide.md', readFileSync(from));
    rmSync(from);
  },
  'directory replaced by a file': (r) => {
    rmSync(join(r, 'dir'), { recursive: true, force: true });
    write(r, 'dir', 'now a file\n');
  },
  '.gitignore rewritten to hide a file': (r) => {
    write(r, '.gitignore', '*.txt\nhidden*\n');
    write(r, 'hidden.md', 'should still show\n');
  },
  'attributes file added': (r) => {
    write(r, '.gitattributes', '*.md text eol=crlf\n');
    write(r, 'note.md', 'x\ny\n');
  },
  'same-size edit, mtime put back': (r) => {
    const st = statSync(join(r, 'README.md'));
    writeFileSync(join(r, 'README.md'), '# six\n');
    utimesSync(join(r, 'README.md'), st.atime, st.mtime);
  },
  'file replaced by a directory': (r) => {
    rmSync(join(r, 'run.sh'));
    write(r, 'run.sh/inside.txt', 'x\n');
  },
  'names git quotes': (r) => {
    write(r, 'é-name.txt', 'accent\n');
    write(r, 'with space/a b.txt', 'space\n');
  },
  'new executable and empty directory': (r) => {
    write(r, 'tool.sh', '#!/bin/sh\n');
    chmodSync(join(r, 'tool.sh'), 0o755);
    mkdirSync(join(r, 'empty-dir'), { recursive: true });
  },
  'nested repository': (r) => {
    write(r, 'vendor/lib/.git/HEAD', 'ref: refs/heads/main\n');
    write(r, 'vendor/lib/code.c', 'int x;\n');
  },
  'nothing at all': () => undefined,
};
const EDIT_NAMES = Object.keys(EDITS);

/** A base repository of the corpus: modes, symlinks, CRLF, deep paths, and the seed's rules and attributes. */
function baseRepo(rnd: () => number): { repo: string; flavour: string } {
  const repo = tempDir('uh-gitdiff-repo-');
  dirs.push(repo);
  git(repo, 'init', '-q', '-b', 'main');
  write(repo, 'README.md', '# one\n');
  write(repo, 'src/app.ts', 'export const a = 1;\n');
  write(repo, 'a/b/c/d/e/f/g/deep.txt', 'deep\n');
  write(repo, 'crlf.txt', 'l1\r\nl2\r\n');
  write(repo, 'docs/guide.md', 'line one\nline two\nline three\nline four\nline five\n');
  write(repo, 'dir/inner.txt', 'inner\n');
  write(repo, 'run.sh', '#!/bin/sh\necho hi\n');
  chmodSync(join(repo, 'run.sh'), 0o755);
  symlinkSync('README.md', join(repo, 'link'));
  symlinkSync('../src/app.ts', join(repo, 'dir/up-link'));
  const ignore = IGNORES[Math.floor(rnd() * IGNORES.length)]!;
  const attributes = ATTRIBUTES[Math.floor(rnd() * ATTRIBUTES.length)]!;
  if (ignore !== '') write(repo, '.gitignore', ignore);
  if (attributes !== null) write(repo, '.gitattributes', attributes);
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'base');
  git(repo, 'tag', 'v1');
  git(repo, 'branch', 'feature');
  if (rnd() < 0.5) git(repo, 'pack-refs', '--all');
  return { repo, flavour: `ignore ${JSON.stringify(ignore)}, attributes ${JSON.stringify(attributes)}` };
}

async function capture(path: GitPath, work: string, commit: string, baseFactsDir: string) {
  const scratch = tempDir('uh-gitdiff-scratch-');
  dirs.push(scratch);
  const patchPath = join(scratch, 'diff.patch');
  const before = gitProcesses();
  const got = await captureDiff(work, commit, patchPath, scratch, { baseFactsDir, git: path });
  const { patchPath: _p, ...rest } = got;
  return { ...rest, patch: readFileSync(patchPath).toString('latin1'), processes: gitProcesses() - before };
}

describe('the git fast path against git processes', () => {
  it('gives the same names, tree, patch and flags over a generated corpus', async () => {
    let fewerProcesses = 0;
    let gitTotal = 0;
    let fastTotal = 0;
    const seen = new Set<string>();
    for (let seed = 1; seed <= 30; seed++) {
      const rnd = seeded(seed * 2654435761);
      const { repo, flavour } = baseRepo(rnd);
      const cacheDir = tempDir('uh-gitdiff-cache-');
      dirs.push(cacheDir);
      const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
      const sandbox = await createSandbox(cacheDir, mirror, commit, `op-gitdiff-${seed}`, new Date());
      const count = Math.floor(rnd() * 4);
      const edits = Array.from({ length: count }, () => EDIT_NAMES[Math.floor(rnd() * EDIT_NAMES.length)]!);
      if (seed <= EDIT_NAMES.length) edits.unshift(EDIT_NAMES[seed - 1]!); // every edit at least once
      for (const name of edits) EDITS[name]!(sandbox.path, rnd);
      edits.forEach((e) => seen.add(e));
      const baseFactsDir = join(cacheDir, 'derived', 'base-facts');
      // The base commit's tree and ignore rules, kept for both: neither capture pays for them.
      await readBaseFacts(sandboxPaths(sandbox.path).gitDir, commit, baseFactsDir, {});
      const byGit = await capture(GIT_PROCESSES, sandbox.path, commit, baseFactsDir);
      const fast = await capture(IN_PROCESS_GIT, sandbox.path, commit, baseFactsDir);
      const why = `seed ${seed}: ${flavour}; edits ${edits.join(', ')}`;
      const { processes: gitCount, ...gitView } = byGit;
      const { processes: fastCount, ...fastView } = fast;
      expect(fastView, why).toEqual(gitView);
      if (fastCount < gitCount) fewerProcesses += 1;
      gitTotal += gitCount;
      fastTotal += fastCount;
    }
    expect([...seen].sort()).toEqual([...EDIT_NAMES].sort());
    // The fast path took its shortcut in part of the corpus: this compares two implementations.
    expect(fewerProcesses).toBeGreaterThan(5);
    if (process.env.UH_TEST_FIGURES) console.log({ cases: 30, fewerProcesses, gitTotal, fastTotal });
  }, 180_000);

  it('catches a fast path that disagrees: one that lists nothing misses a same-size edit git sees', async () => {
    const { repo } = baseRepo(seeded(7));
    const cacheDir = tempDir('uh-gitdiff-cache-');
    dirs.push(cacheDir);
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const sandbox = await createSandbox(cacheDir, mirror, commit, 'op-gitdiff-blind', new Date());
    EDITS['same-size edit']!(sandbox.path, seeded(1));
    const baseFactsDir = join(cacheDir, 'derived', 'base-facts');
    const blind: GitPath = { ...IN_PROCESS_GIT, listChanges: () => [] };
    const byGit = await capture(GIT_PROCESSES, sandbox.path, commit, baseFactsDir);
    const { processes: _a, ...gitView } = byGit;
    const { processes: _b, ...blindView } = await capture(blind, sandbox.path, commit, baseFactsDir);
    expect(byGit.changed).toEqual([{ path: 'README.md', status: 'modified' }]);
    expect(blindView).not.toEqual(gitView);
  });

  it('reads a local ref as git does whenever it answers (loose, packed, tags, branches, a missing name)', async () => {
    let answered = 0;
    for (let seed = 1; seed <= 8; seed++) {
      const { repo } = baseRepo(seeded(seed * 40503));
      for (const ref of ['HEAD', 'main', 'feature', 'v1', 'refs/heads/main', 'nope', 'heads/main']) {
        const fast = IN_PROCESS_GIT.localRef(repo, ref, () => false);
        expect(GIT_PROCESSES.localRef(repo, ref, () => false)).toBeNull();
        if (fast === null) continue;
        answered += 1;
        const byGit = execFileSync('git', ['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`], {
          cwd: repo,
          encoding: 'utf8',
        }).trim();
        expect(fast, `${repo} ${ref}`).toBe(byGit);
      }
    }
    expect(answered).toBeGreaterThan(8);
  });
});
