/**
 * The config reader behind the JS ref path: one row per kind of config, and for every row it
 * answers, git itself (hardened, as uh runs it) must accept that config: an answered config git
 * refuses would let the JS path answer where git fails.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoFormat } from '../../../src/workers/sandbox/repo-format.js';
import { git as hardenedGit } from '../../../src/workers/sandbox/git.js';
import { makeRepo } from '../../support/git-repo.js';
import { removeDir } from '../../support/temp.js';

const INIT = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n';
const CLONE = `${INIT}[remote "origin"]\n\turl = https://example.com/a.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n`;
const V1 = '[core]\n\trepositoryformatversion = 1\n';
/** A key git knows in each section the reader ignores, given a bad boolean, no value, or an unknown ~user path. */
const IGNORED_KEYS = [
  '[pull]\n\trebase = maybe',
  '[merge]\n\tff = maybe',
  '[diff]\n\trenames = maybe',
  '[log]\n\tdate = maybe',
  '[commit]\n\tgpgsign = maybe',
  '[tag]\n\tsort = ~nobody/x',
  '[status]\n\tshowuntrackedfiles = maybe',
  '[rebase]\n\tautosquash = maybe',
  '[init]\n\tdefaultbranch',
  '[lfs]\n\tfetchrecentalways = maybe',
  '[http]\n\tsslverify = maybe',
  '[credential]\n\thelper',
  '[alias]\n\tst',
  '[filter "lfs"]\n\trequired = maybe',
  '[gui]\n\tencoding',
  '[mergetool]\n\tprompt = maybe',
  '[difftool]\n\tprompt = maybe',
  '[remote "origin"]\n\tprune = maybe',
  '[remote]\n\tpushdefault',
  '[branch "main"]\n\trebase = maybe',
  '[submodule "x"]\n\tupdate',
  '[url "x"]\n\tinsteadof',
]
  .map((lines) => `${lines}\n`)
  .join('');

const ROWS: ReadonlyArray<[string, string, 40 | 64 | null]> = [
  ['what git init writes', INIT, 40],
  ['what git clone writes', CLONE, 40],
  [
    'what actions/checkout writes',
    `${INIT}[remote "origin"]\n\turl = https://github.com/o/r\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[gc]\n\tauto = 0\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic ***\n[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n`,
    40,
  ],
  ['version 1, no extension', `${V1}\tbare = false\n`, 40],
  ['version 1, objectformat sha1', `${V1}[extensions]\n\tobjectformat = sha1\n`, 40],
  ['version 1, objectformat sha256', `${V1}[extensions]\n\tobjectFormat = sha256\n`, 64],
  [
    'comments, blank lines, CRLF, quoted values',
    `# mine\r\n${INIT}\n; more\n[remote "o"]\n\turl = "/a b#c" ; why\n\tpushurl = x\\ty # tab\n`,
    40,
  ],
  [
    'a user section and husky hooksPath',
    `${INIT}[user]\n\tname = A "B" C\n\temail = a@b.c\n[core]\n\thooksPath = .husky/_\n`,
    40,
  ],
  [
    'sections rev-parse never reads, odd values',
    `${INIT}[pull]\n\trebase = maybe\n[alias]\n\tst\n[lfs "x"]\n\turl = ~nobody/x\n`,
    40,
  ],
  ['real keys of every section rev-parse never reads, with values git would refuse', `${INIT}${IGNORED_KEYS}`, 40],
  ['reftable', `${V1}[extensions]\n\trefStorage = reftable\n`, null],
  ['worktreeConfig', `${V1}[extensions]\n\tworktreeConfig = true\n`, null],
  ['partialclone', `${V1}[extensions]\n\tpartialclone = origin\n`, null],
  ['objectformat in version 0 (git dies)', `${INIT}[extensions]\n\tobjectformat = sha1\n`, null],
  ['objectformat unknown', `${V1}[extensions]\n\tobjectformat = SHA256\n`, null],
  ['version 2', '[core]\n\trepositoryformatversion = 2\n', null],
  ['no version', '[core]\n\tbare = false\n', null],
  ['an include', `${INIT}[include]\n\tpath = other\n`, null],
  ['an includeIf', `${INIT}[includeIf "gitdir:/x/"]\n\tpath = other\n`, null],
  ['core.worktree (git dies when it is gone)', `${INIT}\tworktree = /nowhere\n`, null],
  ['a bad boolean in core (git dies)', `${INIT}\tfilemode = maybe\n`, null],
  ['an unknown core key', `${INIT}\tfsmonitor = true\n`, null],
  ['gc, read by rev-parse', `${INIT}[gc]\n\twriteCommitGraph = true\n`, null],
  ['gc.auto not a number', `${INIT}[gc]\n\tauto = often\n`, null],
  ['color.pager, read by rev-parse', `${INIT}[color]\n\tpager = true\n`, null],
  ['branch.autosetupmerge, read by rev-parse', `${INIT}[branch]\n\tautosetupmerge = true\n`, null],
  ['user.name without a value (git dies)', `${INIT}[user]\n\tname\n`, null],
  ['hooksPath under ~user (git may die expanding it)', `${INIT}\thooksPath = ~nobody/h\n`, null],
  ['a continuation line', `${INIT}[alias]\n\tx = a \\\n[extensions]\n`, null],
  ['an entry on the header line', '[core] repositoryformatversion = 0\n', null],
  ['an open quote (git dies)', `${INIT}[remote "o"]\n\turl = "abc\n`, null],
  ['an unknown escape (git dies)', `${INIT}[remote "o"]\n\turl = a\\qb\n`, null],
  ['a key before any section', `bare = true\n${INIT}`, null],
  ['a byte order mark', `\ufeff${INIT}`, null],
  ['a bad header', `${INIT}[remote "o]\n`, null],
  ['the extension in a subsection', `${V1}[extensions "x"]\n\ty = 1\n`, null],
];

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

describe('repoFormat', () => {
  it.each(ROWS)('%s', (_what, config, hexLength) => {
    expect(repoFormat(config)?.hexLength ?? null).toBe(hexLength);
  });

  it('git accepts every sha1 config it answers (run as uh runs git)', async () => {
    const repo = makeRepo();
    dirs.push(repo);
    const refused: string[] = [];
    for (const [what, config, hexLength] of ROWS) {
      if (hexLength !== 40) continue;
      writeFileSync(join(repo, '.git', 'config'), config);
      const { code } = await hardenedGit(['rev-parse', '--verify', '--quiet', '--end-of-options', 'main^{commit}'], {
        cwd: repo,
        okCodes: [1, 128],
      });
      if (code !== 0) refused.push(what);
    }
    expect(refused).toEqual([]);
  });

  it('the rows the reader refuses include configs git itself dies on (the cross-check is not vacuous)', async () => {
    const repo = makeRepo();
    dirs.push(repo);
    writeFileSync(join(repo, '.git', 'config'), `${INIT}\tfilemode = maybe\n`);
    const { code } = await hardenedGit(['rev-parse', '--verify', '--quiet', '--end-of-options', 'main^{commit}'], {
      cwd: repo,
      okCodes: [1, 128],
    });
    expect(code).toBe(128);
  });
});
