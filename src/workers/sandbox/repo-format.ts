/**
 * How a local repository stores its refs and objects, read from its config file in JavaScript
 * for `local-ref.ts`; null whenever git might read the file otherwise, or refuse it. Null is
 * always safe: the caller then asks git.
 *
 * Accepted, and nothing else:
 * - the syntax git writes and users type: `[section]` and `[section "sub"]` headers alone on a
 *   line, `key = value` and bare `key` lines, comments. Any other line (a `\` continuation, an
 *   entry after a header on the same line, a control character) is null: git refuses a config it
 *   cannot parse, and then every command in that repository fails.
 * - sections `git rev-parse` never reads (`IGNORED`), any key with any value;
 * - the keys it does read that `git init`, `clone`, `worktree` and common tools (actions/checkout,
 *   husky) write
 *   (`CHECKED`), each with a value git accepts. An unknown key in a section rev-parse reads may
 *   hold a value git dies on (`core.*`, `gc.*`, `color.pager`, `user.name` without a value…);
 * - `core.repositoryformatversion` 0 with no extension, or 1 with no extension but
 *   `objectformat` (sha1 or sha256). Any other extension changes how refs or objects are stored
 *   (`refstorage = reftable`, `worktreeconfig`, `partialclone`): null.
 *
 * No `include`/`includeIf` (another file's contents) and no `core.worktree` (git dies when it
 * is gone) get through: their sections are not in either list.
 */

export interface RepoFormat {
  /** Length of an object id in hex: 40 (sha1) or 64 (sha256). */
  hexLength: 40 | 64;
}

interface ConfigEntry {
  section: string;
  /** `[section "sub"]` or the old `[section.sub]`. */
  sub: boolean;
  key: string;
  /** Null for a bare key (git reads it as boolean true). */
  value: string | null;
}

type ValueCheck = (value: string | null) => boolean;
const bool: ValueCheck = (v) => v === null || /^(true|false|yes|no|on|off|1|0|)$/i.test(v);
const text: ValueCheck = (v) => v !== null;

/** Keys rev-parse parses, each with the values git accepts for it (checked against git 2.39). */
const CHECKED: Readonly<Record<string, ValueCheck>> = {
  'core.repositoryformatversion': (v) => v === '0' || v === '1',
  'core.filemode': bool,
  'core.bare': bool,
  'core.ignorecase': bool,
  'core.precomposeunicode': bool,
  'core.symlinks': bool,
  'core.sparsecheckout': bool,
  'core.logallrefupdates': (v) => bool(v) || /^always$/i.test(v ?? ''),
  'core.autocrlf': (v) => bool(v) || /^input$/i.test(v ?? ''),
  // A path: git expands `~user/` and dies when it cannot.
  'core.hookspath': (v) => v !== null && !v.startsWith('~') && !v.startsWith('%('),
  // actions/checkout writes `gc.auto 0` into every repository it checks out.
  'gc.auto': (v) => v !== null && /^-?[0-9]{1,9}$/.test(v),
  'user.name': text,
  'user.email': text,
  'user.signingkey': text,
  'extensions.objectformat': (v) => v === 'sha1' || v === 'sha256',
};

/** Sections rev-parse never reads (a value git would refuse elsewhere changes nothing for it). */
const IGNORED = new Set([
  'remote',
  'pull',
  'merge',
  'mergetool',
  'diff',
  'difftool',
  'alias',
  'credential',
  'http',
  'url',
  'gui',
  'filter',
  'rebase',
  'status',
  'log',
  'commit',
  'tag',
  'init',
  'lfs',
]);
/** Sections rev-parse reads only without a subsection (`branch.autosetupmerge`, not `branch.<name>.*`). */
const IGNORED_WITH_SUB = new Set(['branch', 'submodule']);

/** The repository format this config declares, or null when git might see it otherwise. Pure. */
export function repoFormat(config: string): RepoFormat | null {
  const entries = configEntries(config);
  if (!entries) return null;
  let version: string | null = null;
  let objectFormat: string | null = null;
  for (const entry of entries) {
    const name = `${entry.section}.${entry.key}`;
    const ignored = IGNORED.has(entry.section) || (entry.sub && IGNORED_WITH_SUB.has(entry.section));
    if (!ignored && (entry.sub || !CHECKED[name]?.(entry.value))) return null;
    if (name === 'core.repositoryformatversion' && !entry.sub) version = entry.value;
    if (name === 'extensions.objectformat' && !entry.sub) objectFormat = entry.value;
  }
  // Version 0 with an extension git reads only in version 1 is a fatal error for git.
  if (version === null || (version === '0' && objectFormat !== null)) return null;
  return { hexLength: objectFormat === 'sha256' ? 64 : 40 };
}

const HEADER = /^\[([A-Za-z0-9.-]+)(?:[ \t]+"((?:[^"\\]|\\[\\"])*)")?\][ \t]*(?:[#;].*)?$/;
const ENTRY = /^([A-Za-z][A-Za-z0-9-]*)[ \t]*(?:=(.*))?$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f\ufeff]/;

/** The entries of a config file in the syntax above, or null on any other line. Pure. */
function configEntries(config: string): ConfigEntry[] | null {
  const entries: ConfigEntry[] = [];
  let section: { section: string; sub: boolean } | null = null;
  for (const raw of config.split('\n')) {
    const line = (raw.endsWith('\r') ? raw.slice(0, -1) : raw).replace(/^[ \t]+/, '');
    if (CONTROL.test(line)) return null;
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = HEADER.exec(line);
    if (header) {
      const name = (header[1] as string).toLowerCase();
      const dot = name.indexOf('.');
      section = { section: dot < 0 ? name : name.slice(0, dot), sub: dot >= 0 || header[2] !== undefined };
      continue;
    }
    const entry = ENTRY.exec(line);
    if (!entry || !section) return null;
    const value = entry[2] === undefined ? null : configValue(entry[2]);
    if (value === undefined) return null;
    entries.push({ ...section, key: (entry[1] as string).toLowerCase(), value });
  }
  return entries;
}

const ESCAPES: Readonly<Record<string, string>> = { n: '\n', t: '\t', b: '\b', '\\': '\\', '"': '"' };

/**
 * A value as git's `parse_value` reads it: leading and trailing blanks dropped, `"…"` quoting,
 * `;`/`#` comments outside quotes, the escapes git knows. Undefined where git refuses the line
 * (an open quote, an unknown escape) or reads on into the next one (a trailing `\`). Pure.
 */
function configValue(raw: string): string | undefined {
  let value = '';
  let quoted = false;
  let trimTo = -1; // where trailing blanks outside quotes began, -1 when none
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if ((c === ' ' || c === '\t') && !quoted) {
      if (trimTo < 0) trimTo = value.length;
      if (value.length > 0) value += c;
      continue;
    }
    if (!quoted && (c === ';' || c === '#')) break;
    trimTo = -1;
    if (c === '\\') {
      const escaped = ESCAPES[raw[++i] ?? ''];
      if (escaped === undefined) return undefined;
      value += escaped;
    } else if (c === '"') quoted = !quoted;
    else value += c;
  }
  if (quoted) return undefined;
  return trimTo >= 0 ? value.slice(0, trimTo) : value;
}
