/**
 * The two small git dirs of a sandbox, written by hand (no `git init`: no process, no template,
 * nothing read from any config), and the check that uh's private one is still exactly what uh
 * wrote. A git dir here is HEAD (the commit, detached), config, `objects/info/alternates` (the
 * mirror's objects, read-only), empty `objects/pack`, `refs/heads`, `refs/tags`: what
 * `git init --template=` writes, with HEAD detached at the base commit. uh's private (bare) one
 * also holds `info/attributes` (`NEUTRAL_ATTRIBUTES`): the checkout, the listing, the staging and
 * the patch then read no attribute from any `.gitattributes`, the agent's or the base's.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDir } from '../../shared/fs/make-dir.js';

export interface GitDirSpec {
  /** uh's private dir is bare (its work tree is always given with `--work-tree`); the agent's is not. */
  bare: boolean;
  /** `<mirror>/objects`, real path. */
  alternates: string;
  commit: string;
}

/**
 * Every attribute that makes git store, list or print other bytes than the worktree's, set back to
 * unspecified for every path. `$GIT_DIR/info/attributes` wins over every `.gitattributes` (and over
 * a macro like `binary` a `.gitattributes` assigns), so whatever an in-tree file says, the blob is
 * the file's bytes (no eol conversion: `core.autocrlf` is unset in every config uh lets git read;
 * no `working-tree-encoding`, `filter` or `ident`), binary is decided by content alone (no `-diff`,
 * no `diff=driver`), and no `export-subst`/`export-ignore` applies. Git 2.39 has no
 * `--attr-source`; this is its equivalent for every git process uh runs in a sandbox.
 */
export const NEUTRAL_ATTRIBUTES = `* ${[
  'text',
  'eol',
  'crlf',
  'filter',
  'ident',
  'working-tree-encoding',
  'diff',
  'merge',
  'binary',
  'export-subst',
  'export-ignore',
  'whitespace',
]
  .map((a) => `!${a}`)
  .join(' ')}\n`;

/** Write (or rewrite) the neutral attributes of uh's private git dir (an older sandbox lacks them). */
export function writeNeutralAttributes(gitDir: string): void {
  const path = join(gitDir, 'info', 'attributes');
  if (fileIs(path, NEUTRAL_ATTRIBUTES)) return;
  makeDir(join(gitDir, 'info'));
  writeFileSync(path, NEUTRAL_ATTRIBUTES);
}

/** sha256 repositories (64-hex commits) need the object format named in their config. Pure. */
export function objectFormatOf(commit: string): 'sha1' | 'sha256' {
  return commit.length === 64 ? 'sha256' : 'sha1';
}

/** The bytes of an object id in the repository of `commit`: 20 (SHA-1) or 32 (SHA-256). Pure. */
export function objectIdBytes(commit: string): 20 | 32 {
  return objectFormatOf(commit) === 'sha256' ? 32 : 20;
}

/** The config `git init` would write for this spec. Pure. */
export function gitDirConfig(spec: Pick<GitDirSpec, 'bare' | 'commit'>): string {
  const sha256 = objectFormatOf(spec.commit) === 'sha256';
  const lines = [
    '[core]',
    `\trepositoryformatversion = ${sha256 ? 1 : 0}`,
    '\tfilemode = true',
    `\tbare = ${spec.bare}`,
  ];
  if (!spec.bare) lines.push('\tlogallrefupdates = true');
  if (sha256) lines.push('[extensions]', '\tobjectformat = sha256');
  return `${lines.join('\n')}\n`;
}

/** Write a fresh git dir at `gitDir` (which must not exist yet, or be empty). */
export function writeGitDir(gitDir: string, spec: GitDirSpec): void {
  makeDir(join(gitDir, 'objects', 'info'));
  mkdirSync(join(gitDir, 'objects', 'pack'));
  makeDir(join(gitDir, 'refs', 'heads'));
  mkdirSync(join(gitDir, 'refs', 'tags'));
  writeFileSync(join(gitDir, 'config'), gitDirConfig(spec));
  writeFileSync(join(gitDir, 'HEAD'), `${spec.commit}\n`);
  writeFileSync(join(gitDir, 'objects', 'info', 'alternates'), `${spec.alternates}\n`);
  if (spec.bare) writeNeutralAttributes(gitDir);
}

/** Point an existing git dir of ours at another commit (HEAD only). */
export function setHead(gitDir: string, commit: string): void {
  writeFileSync(join(gitDir, 'HEAD'), `${commit}\n`);
}

const LOOSE = /^[0-9a-f]{2}$/;

function entries(dir: string): string[] | null {
  try {
    if (!lstatSync(dir).isDirectory()) return null;
    return readdirSync(dir).sort();
  } catch {
    return null;
  }
}

function fileIs(path: string, text: string): boolean {
  try {
    return lstatSync(path).isFile() && readFileSync(path, 'utf8') === text;
  } catch {
    return false;
  }
}

const same = (a: string[] | null, b: string[]) => a !== null && a.length === b.length && a.every((x, i) => x === b[i]);

/** Every file and dir of uh's private git dir that `privateGitDirDoubt` reads (but the loose objects). */
export const PRIVATE_GIT_DIR_PARTS: readonly string[] = [
  'HEAD',
  'config',
  'info',
  'info/attributes',
  'objects',
  'objects/info',
  'objects/info/alternates',
  'objects/pack',
  'refs',
  'refs/heads',
  'refs/tags',
];

/**
 * uh's private git dir is exactly as uh wrote it: the same HEAD, config and alternates, no hooks,
 * an `info/` holding only the neutral attributes, no refs, no packs, nothing else; loose objects (`objects/xx/`, written by the diff
 * capture) are the only thing allowed to have appeared. Null when it is; else what is wrong.
 */
export function privateGitDirDoubt(gitDir: string, spec: GitDirSpec): string | null {
  const doubt = layoutDoubt(gitDir, spec, ['HEAD', 'config', 'info', 'objects', 'refs'], true);
  if (doubt !== null) return doubt;
  if (
    !same(entries(join(gitDir, 'info')), ['attributes']) ||
    !fileIs(join(gitDir, 'info', 'attributes'), NEUTRAL_ATTRIBUTES)
  )
    return 'info/attributes changed';
  return null;
}

/**
 * The agent's git dir is exactly as uh wrote it (`writeAgentGitDir`): the same files, an `index`
 * byte for byte uh's index `uhIndex`, and nothing the agent's git could have added (no loose
 * object, log, hook, ref or anything else). Null when it is; else what is wrong.
 */
export function agentGitDirDoubt(gitDir: string, spec: GitDirSpec, uhIndex: string): string | null {
  const doubt = layoutDoubt(gitDir, spec, ['HEAD', 'config', 'index', 'objects', 'refs'], false);
  if (doubt !== null) return doubt;
  try {
    if (
      !lstatSync(join(gitDir, 'index')).isFile() ||
      !readFileSync(join(gitDir, 'index')).equals(readFileSync(uhIndex))
    )
      return 'index changed';
  } catch {
    return 'index unreadable';
  }
  return null;
}

function layoutDoubt(gitDir: string, spec: GitDirSpec, top: string[], looseObjects: boolean): string | null {
  if (!same(entries(gitDir), top)) return `unexpected entries in ${gitDir}`;
  if (!fileIs(join(gitDir, 'HEAD'), `${spec.commit}\n`)) return 'HEAD changed';
  if (!fileIs(join(gitDir, 'config'), gitDirConfig(spec))) return 'config changed';
  if (!fileIs(join(gitDir, 'objects', 'info', 'alternates'), `${spec.alternates}\n`)) return 'alternates changed';
  if (!same(entries(join(gitDir, 'objects', 'info')), ['alternates'])) return 'objects/info changed';
  if (!same(entries(join(gitDir, 'objects', 'pack')), [])) return 'objects/pack changed';
  if (!same(entries(join(gitDir, 'refs')), ['heads', 'tags'])) return 'refs changed';
  if (!same(entries(join(gitDir, 'refs', 'heads')), []) || !same(entries(join(gitDir, 'refs', 'tags')), []))
    return 'refs changed';
  const objects = entries(join(gitDir, 'objects')) ?? [];
  if (objects.some((e) => e !== 'info' && e !== 'pack' && !(looseObjects && LOOSE.test(e))))
    return 'unexpected entries in objects';
  return null;
}

/** Remove the loose objects a previous mission's diff capture wrote (`objects/xx/`). */
export function dropLooseObjects(gitDir: string): void {
  for (const e of readdirSync(join(gitDir, 'objects'))) {
    if (LOOSE.test(e)) rmSync(join(gitDir, 'objects', e), { recursive: true, force: true });
  }
}
