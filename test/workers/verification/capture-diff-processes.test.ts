/**
 * What one diff capture costs: with the base facts cached, an untouched sandbox costs no git
 * process (compared with uh's index in process; one, the listing, when a racy entry must be
 * hashed and attributes could convert it). A plain change costs two (the listing, one diff-tree for names and
 * patch together: staged and its tree built in process); one git must stage (a repository with
 * `.gitattributes`) three, deletions included (one `update-index`), four when a tracked path lies
 * beyond a symbolic link (`update-index --force-remove` first). The patch
 * is the one `git diff --cached --binary -M` would print, either way. (New files alone cost
 * less: test/workers/verification/added-patch.test.ts.)
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxPaths } from '../../../src/workers/sandbox/worktree.js';
import { captureDiff } from '../../../src/workers/verification/capture-diff.js';
import { IN_PROCESS_GIT } from '../../../src/workers/git-path.js';
import { freshSandbox } from '../../support/sandbox.js';
import { removeDir, tempDir } from '../../support/temp.js';
import { gitProcesses } from '../../support/spawned.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const sandboxOf = (files: Record<string, string>, id: string) => freshSandbox(files, id, dirs, 'uh-diffproc-');

describe('captureDiff processes', () => {
  it.each([
    ['a plain change: staged in process', {}, 0, 2],
    ['with .gitattributes: staged by git', { '.gitattributes': '*.bin binary\n' }, 1, 3],
  ])(
    'when nothing changed, no git process (one with attributes); %s (%s), names and patch consistent',
    async (_name, extra: Record<string, string>, unchanged, processes) => {
      const { sandbox, commit, scratch, baseFactsDir, patch } = await sandboxOf(
        { 'README.md': '# one\n', '.gitignore': '*.log\n', 'a.txt': 'a\nb\nc\nd\ne\nf\ng\n', ...extra },
        `op-diffproc-${processes}`,
      );

      const first = await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT }); // computes and caches the base facts
      expect(first.changed).toEqual([]);
      // Every entry racy (as new as uh's index), as a checkout within the index's clock tick leaves
      // them: proven by content in process, unless attributes could convert it (git lists then).
      utimesSync(sandboxPaths(sandbox.path).index, new Date('2001-01-01'), new Date('2001-01-01'));
      let before = gitProcesses();
      const clean = await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
      expect(gitProcesses() - before).toBe(unchanged);
      expect(clean).toMatchObject({ changed: [], bytes: 0, tree: first.tree, headCommit: commit });

      writeFileSync(join(sandbox.path, 'README.md'), '# two\n');
      rmSync(join(sandbox.path, 'a.txt'));
      writeFileSync(join(sandbox.path, 'b.txt'), 'a\nb\nc\nd\ne\nf\ng\n'); // a rename of a.txt
      writeFileSync(join(sandbox.path, 'x.log'), 'ignored by the base\n');
      mkdirSync(join(sandbox.path, 'new'));
      writeFileSync(join(sandbox.path, 'new', 'file.txt'), 'n\n');
      const uhIndex = sandboxPaths(sandbox.path).index;
      const indexBefore = { bytes: readFileSync(uhIndex), mtimeMs: statSync(uhIndex).mtimeMs };
      before = gitProcesses();
      const changed = await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
      expect(gitProcesses() - before).toBe(processes);
      // uh's own index is read, never written (the pool's release checks it is as uh wrote it).
      expect({ bytes: readFileSync(uhIndex), mtimeMs: statSync(uhIndex).mtimeMs }).toEqual(indexBefore);
      // git's byte order, whatever the locale: upper case before lower case.
      expect(changed.changed).toEqual([
        { path: 'README.md', status: 'modified' },
        { path: 'b.txt', status: 'renamed', from: 'a.txt' },
        { path: 'new/file.txt', status: 'added' },
      ]);
      const text = readFileSync(patch, 'utf8');
      expect(text).toContain('rename from a.txt');
      expect(text).toContain('+# two');
      expect(changed.bytes).toBe(Buffer.byteLength(text));
      expect(changed.tree).not.toBe(first.tree);
      // Nothing is left in the scratch dir but the patch: the paths went to git on its stdin, the
      // base's ignore rules are a file kept per commit beside its facts.
      expect(readdirSync(scratch)).toEqual(['diff.patch']);
      expect(readFileSync(join(baseFactsDir, `${commit}.exclude`), 'utf8')).toContain('*.log');
    },
  );

  it("kept ignore rules that are not exactly the base's are written again: they hide nothing the base does not ignore", async () => {
    const { sandbox, commit, scratch, baseFactsDir, patch } = await sandboxOf(
      { 'README.md': '# one\n', '.gitignore': '*.log\n' },
      'op-diffexcl',
    );
    await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
    const kept = join(baseFactsDir, `${commit}.exclude`);
    writeFileSync(kept, '*\n');
    writeFileSync(join(sandbox.path, 'new.txt'), 'seen\n');
    writeFileSync(join(sandbox.path, 'x.log'), 'ignored by the base\n');
    // New files alone are listed in process from the base facts (the kept file is never read):
    // a tracked change too makes git list, with the kept file.
    const inProcess = await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
    expect(inProcess.changed).toEqual([{ path: 'new.txt', status: 'added' }]);
    writeFileSync(join(sandbox.path, 'README.md'), '# two\n');
    const changed = await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
    expect(changed.changed).toEqual(
      [
        { path: 'new.txt', status: 'added' },
        { path: 'README.md', status: 'modified' },
      ].sort((a, b) => (a.path < b.path ? -1 : 1)),
    );
    expect(readFileSync(kept, 'utf8')).not.toBe('*\n');
  });

  it('the kept rules file removed while the listing starts (uh gc): listed again from a scratch copy, nothing hidden', async () => {
    const { sandbox, commit, scratch, baseFactsDir, patch } = await sandboxOf(
      { 'README.md': '# one\n', '.gitignore': '*.log\n' },
      'op-diffgone',
    );
    await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
    // A git on PATH that removes the kept file just before the real git reads it.
    const bin = tempDir('uh-diffgone-bin-');
    dirs.push(bin);
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    writeFileSync(
      join(bin, 'git'),
      `#!/bin/sh\nfor a; do case "$a" in --exclude-from=*.exclude) rm -f "\${a#--exclude-from=}";; esac; done\nexec ${realGit} "$@"\n`,
    );
    chmodSync(join(bin, 'git'), 0o755);
    writeFileSync(join(sandbox.path, 'new.txt'), 'seen\n');
    writeFileSync(join(sandbox.path, 'x.log'), 'ignored by the base\n');
    writeFileSync(join(sandbox.path, 'README.md'), '# two\n'); // a tracked change: git lists
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      const changed = await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
      expect(changed.changed).toEqual([
        { path: 'README.md', status: 'modified' },
        { path: 'new.txt', status: 'added' },
      ]);
    } finally {
      process.env.PATH = path;
    }
    expect(existsSync(join(baseFactsDir, `${commit}.exclude`))).toBe(false);
    expect(readdirSync(scratch)).toEqual(['diff.patch']);
  });

  it('a base without ignore rules: no rules file at all, an ignored-looking file is a change', async () => {
    const { sandbox, commit, scratch, baseFactsDir, patch } = await sandboxOf(
      { 'README.md': '# one\n' },
      'op-diffnoexcl',
    );
    writeFileSync(join(sandbox.path, 'x.log'), 'a change\n');
    writeFileSync(join(sandbox.path, 'name with\nnewline.txt'), 'odd\n');
    const changed = await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
    expect(changed.changed).toEqual([
      { path: 'name with\nnewline.txt', status: 'added' },
      { path: 'x.log', status: 'added' },
    ]);
    expect(readdirSync(baseFactsDir).filter((n) => n.endsWith('.exclude'))).toEqual([]);
  });

  it.each([
    ['in process', {}, 4], // 2 for the base facts, listing, diff-tree
    ['by git', { '.gitattributes': '*.bin binary\n' }, 6], // 2 for the base facts, listing, 2 update-index, diff-tree
  ])(
    'a tracked directory replaced by a symlink, staged %s: its files deleted, the link added (git refuses paths beyond a link)',
    async (_name, extra: Record<string, string>, processes) => {
      const { sandbox, commit, scratch, baseFactsDir, patch } = await sandboxOf(
        { 'README.md': '# one\n', 'docs/guide.md': 'guide\n', 'src/app.txt': 'app\n', ...extra },
        `op-diffsym-${processes}`,
      );
      rmSync(join(sandbox.path, 'docs'), { recursive: true });
      symlinkSync('src', join(sandbox.path, 'docs'));
      writeFileSync(join(sandbox.path, 'README.md'), '# two\n');
      const before = gitProcesses();
      const changed = await captureDiff(sandbox.path, commit, patch, scratch, { baseFactsDir, git: IN_PROCESS_GIT });
      expect(gitProcesses() - before).toBe(processes);
      expect(changed.changed).toEqual([
        { path: 'README.md', status: 'modified' },
        { path: 'docs', status: 'added' },
        { path: 'docs/guide.md', status: 'deleted' },
      ]);
      expect(readFileSync(patch, 'utf8')).toContain('+src');
    },
  );
});
