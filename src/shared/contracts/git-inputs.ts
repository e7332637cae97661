/**
 * Pure checks of `repository.url` and `repository.ref` (no git is run): URL forms as a table,
 * refs by the rules of `git check-ref-format --allow-onelevel` plus `HEAD` and commit ids.
 */
import { LIMITS } from './input-limits.js';

export type UrlKind = 'https' | 'http' | 'ssh' | 'scp' | 'file' | 'local';

/** Schemes `uh` hands to git; anything else (`ext::`, `fd::`, `git://`, `ftp://`) is refused. */
const SCHEME_KIND: Record<string, UrlKind> = {
  https: 'https',
  http: 'http',
  ssh: 'ssh',
  'git+ssh': 'ssh',
  'ssh+git': 'ssh',
  file: 'file',
};

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** What kind of repository location this is, or a one-line reason it is refused. */
export function classifyRepositoryUrl(url: string): { kind: UrlKind } | { problem: string } {
  if (url.length > LIMITS.urlChars) return { problem: `longer than ${LIMITS.urlChars} characters` };
  if (CONTROL.test(url)) return { problem: 'contains a control character' };
  if (url.startsWith('-')) return { problem: 'must not begin with "-" (git would read it as an option)' };
  const transport = /^([A-Za-z][A-Za-z0-9+.-]*)::/.exec(url);
  if (transport)
    return { problem: `the "${transport[1]}::" transport is not allowed; use https://, ssh:// or user@host:path` };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  if (scheme) {
    const kind = SCHEME_KIND[(scheme[1] as string).toLowerCase()];
    if (!kind) return { problem: `scheme "${scheme[1]}://" is not allowed; use https://, ssh:// or user@host:path` };
    const rest = url.slice(scheme[0].length);
    if (kind !== 'file' && (rest === '' || rest.startsWith('-')))
      return { problem: 'needs a host, not beginning with "-"' };
    return { kind };
  }
  const scp = /^([^/\s@]+)@([^/\s:]+):/.exec(url);
  if (scp) return (scp[2] as string).startsWith('-') ? { problem: 'host must not begin with "-"' } : { kind: 'scp' };
  return { kind: 'local' };
}

/** Characters `git check-ref-format` refuses anywhere in a ref name. */
// eslint-disable-next-line no-control-regex
const REF_BAD_CHARS = /[\u0000-\u0020\u007f~^:?*[\\]/;

/** Rules of `git check-ref-format --allow-onelevel`, each a test and the reason shown. */
const REF_RULES: ReadonlyArray<[(ref: string) => boolean, string]> = [
  [(r) => r.length > LIMITS.refChars, `longer than ${LIMITS.refChars} characters`],
  [(r) => REF_BAD_CHARS.test(r), 'contains a space, control character or one of ~ ^ : ? * [ \\'],
  [(r) => r.startsWith('-'), 'must not begin with "-"'],
  [(r) => r.includes('..'), 'must not contain ".."'],
  [(r) => r.includes('@{'), 'must not contain "@{"'],
  [(r) => r === '@', 'must not be "@"'],
  [(r) => r.startsWith('/') || r.endsWith('/') || r.includes('//'), 'must not begin or end with "/" or contain "//"'],
  [(r) => r.endsWith('.'), 'must not end with "."'],
  [
    (r) => r.split('/').some((c) => c.startsWith('.') || c.endsWith('.lock')),
    'no component may begin with "." or end with ".lock"',
  ],
];

/** Null when `ref` is a valid branch, tag, `HEAD` or commit id; else why not (git check-ref-format). */
export function refProblem(ref: string): string | null {
  if (ref === 'HEAD' || /^[0-9a-f]{4,64}$/.test(ref)) return null;
  for (const [fails, reason] of REF_RULES) if (fails(ref)) return reason;
  return null;
}
