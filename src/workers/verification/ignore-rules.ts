/**
 * The base commit's ignore rules (the one exclude file `anchorIgnoreFiles` makes) as a predicate,
 * for the diff's in-process listing: true when `git ls-files --others --exclude-from=<rules>`
 * leaves a path out. Pure.
 *
 * Only a subset of gitignore is taken, the one real repositories write (`node_modules/`, `*.log`,
 * `/build`, `docs/*.pdf`, and the lines of nested `.gitignore` files, anchored with a `**`
 * component below their directory); any other line makes the whole set null, and git lists:
 * - a negation (`!`): the last matching line would decide, and a parent's exclusion could not be
 *   undone; refused rather than ordered;
 * - a backslash, a character class (`[`…`]`) or any byte outside printable ASCII without space;
 * - a `**` that is not a whole path component (git reads it as `*`; refused all the same).
 * Within the subset the rules are git's (gitignore(5)): a line without a slash (a trailing one
 * aside) matches a name at any depth; one with a slash matches the path from the top, `*` and `?`
 * never crossing a slash; `**` as a component matches any number of them (a trailing `/**`: at
 * least one); a trailing slash matches directories only; and a path whose parent directory is
 * ignored is ignored (git never looks inside).
 */

/** Is `path` (`/`-separated, from the top) ignored; `isDir`: it is a directory. */
export type IgnoreTest = (path: string, isDir: boolean) => boolean;

const GLOBSTAR = Symbol('**');
type Part = RegExp | typeof GLOBSTAR;

interface Rule {
  /** Matches the path from the top (the line had a slash), else the last name only. */
  anchored: boolean;
  dirOnly: boolean;
  parts: Part[];
}

/** A line this module takes: printable ASCII without space, backslash or brackets. */
const TAKEN = /^[\x21-\x5a\x5e-\x7e]+$/;

/** The rules as a test, or null when a line is outside the subset (see the module comment). */
export function compileIgnoreRules(text: string): IgnoreTest | null {
  const rules: Rule[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const rule = compileLine(line);
    if (rule === null) return null;
    rules.push(rule);
  }
  return (path, isDir) => {
    const names = path.split('/');
    for (let n = 1; n <= names.length; n++) {
      const dir = n < names.length || isDir;
      if (rules.some((rule) => matches(rule, names, n, dir))) return true;
    }
    return false;
  };
}

function compileLine(line: string): Rule | null {
  if (!TAKEN.test(line) || line.startsWith('!') || line.startsWith('#')) return null;
  const dirOnly = line.endsWith('/');
  const body = dirOnly ? line.slice(0, -1) : line;
  const anchored = body.includes('/');
  const core = body.startsWith('/') ? body.slice(1) : body;
  if (core === '') return null;
  const parts: Part[] = [];
  for (const name of core.split('/')) {
    if (name === '') return null;
    if (name === '**') parts.push(GLOBSTAR);
    else if (name.includes('**')) return null;
    else parts.push(globName(name));
  }
  // A lone `**` has no slash but is no name glob: as a path, it matches every one.
  return { anchored: anchored || parts[0] === GLOBSTAR, dirOnly, parts };
}

/** One path component's glob: `*` any run of characters, `?` one, the rest literal. */
function globName(name: string): RegExp {
  const source = name
    .replace(/[.+^${}()|]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`);
}

/** Does `rule` match the first `n` names of a path (a directory when `dir`)? */
function matches(rule: Rule, names: readonly string[], n: number, dir: boolean): boolean {
  if (rule.dirOnly && !dir) return false;
  if (!rule.anchored) return (rule.parts[0] as RegExp).test(names[n - 1]!);
  return matchFrom(rule.parts, 0, names, 0, n);
}

function matchFrom(parts: readonly Part[], p: number, names: readonly string[], i: number, n: number): boolean {
  if (p === parts.length) return i === n;
  const part = parts[p]!;
  if (part === GLOBSTAR) {
    if (p === parts.length - 1) return i < n;
    for (let k = i; k <= n; k++) if (matchFrom(parts, p + 1, names, k, n)) return true;
    return false;
  }
  return i < n && part.test(names[i]!) && matchFrom(parts, p + 1, names, i + 1, n);
}
