/**
 * What a program needs to be seen inside the sandbox (docs/security.md "Programs as users install
 * them"). The isolation masks the real home, the cache and state dirs and the user's checkout, and
 * gives each process a private /tmp; a program installed under one of them (nvm, `~/.local/bin`,
 * a `node_modules/.bin` in a project) is re-exposed read-only with what it needs: the link it was
 * found by (its directory, so the link stays a link), each hop of its symlinks, its install prefix
 * (`<prefix>/bin/x → <prefix>/lib/node_modules/pkg/…`: the prefix; a `node_modules/.bin` entry: that
 * `node_modules`; a Python venv: its root), and the interpreter of its shebang, found on the PATH
 * the program gets. A bind that would be, or contain, a secret location (`~/.ssh`, `~/.aws`, uh's
 * cache and state dirs, …) is narrowed to the next smaller candidate down to the file itself; a
 * program or path argument that cannot be exposed (under /tmp, in a secret location) is refused.
 * Reads the file system; never writes.
 */
import { closeSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { whichOnPath } from '../../shared/process/bwrap-probe.js';

/** Under the home: never bound into a sandbox, whatever a program or an operator path asks. */
export const HOME_SECRETS = [
  '.ssh',
  '.aws',
  '.config/gh',
  '.netrc',
  '.git-credentials',
  '.docker',
  '.kube',
  '.gnupg',
  '.password-store',
  '.local/share/keyrings',
  '.config/gcloud',
  '.azure',
];

/** How one phase's sandbox sees the host (built from its plan). */
export interface SandboxView {
  /** True when `path` is not visible inside the sandbox (under a mask or the private /tmp, and not bound). */
  hidden(path: string): boolean;
  /** True when `path` is in (or is) a location never re-exposed. */
  secret(path: string): boolean;
  /** True when binding `path` would re-expose a secret location (it is one, or holds one). */
  holdsSecret(path: string): boolean;
}

/** Why a program cannot run in the sandbox: the path and the operator's next step. */
export interface ProgramRefusal {
  path: string;
  message: string;
  hint: string;
}

export interface ProgramExposure {
  /** Read-only binds that make the program (and what it needs) visible. */
  readable: string[];
  refusal: ProgramRefusal | null;
}

const within = (path: string, dir: string): boolean =>
  path === dir || path.startsWith(dir.endsWith(sep) ? dir : `${dir}${sep}`);

/**
 * A view of the sandbox from its masks, its binds and its secret locations. A bind never holds a
 * mask's root either (the home, the user's checkout): only what is inside one is re-exposed.
 */
export function sandboxView(
  masked: readonly string[],
  bound: readonly string[],
  secrets: readonly string[],
): SandboxView {
  const covers = [...masked, '/tmp'];
  return {
    hidden: (p) => covers.some((m) => within(p, m)) && !bound.some((b) => within(p, b)),
    secret: (p) => secrets.some((s) => within(p, s)),
    holdsSecret: (p) => secrets.some((s) => within(p, s) || within(s, p)) || covers.some((m) => within(m, p)),
  };
}

/** The secret locations of a phase: under `home`, and uh's own dirs and files. */
export function secretLocations(home: string | null, own: ReadonlyArray<string | null | undefined>): string[] {
  const underHome = home ? HOME_SECRETS.map((s) => join(home, s)) : [];
  const all = [...underHome, ...own].filter((p): p is string => typeof p === 'string' && isAbsolute(p) && p !== '/');
  return [...new Set(all.flatMap((p) => [p, real(p)]))];
}

function real(p: string): string {
  try {
    // Most of the home's secret locations do not exist: an lstat that returns nothing for them is
    // cheaper than the error realpath throws (what it resolves would fail the same way).
    if (!lstatSync(p, { throwIfNoEntry: false })) return p;
    // One realpath(3) call: the JS version lstat()s every component of every path.
    return realpathSync.native(p);
  } catch {
    return p;
  }
}

/** The link path, each symlink hop, and the real file last (at most 40 hops). */
export function symlinkChain(path: string): string[] {
  const chain = [path];
  let current = path;
  for (let i = 0; i < 40; i++) {
    let target: string;
    try {
      target = readlinkSync(current);
    } catch {
      break;
    }
    current = resolve(real(dirname(current)), target);
    chain.push(current);
  }
  const end = real(current);
  if (end !== chain.at(-1)) chain.push(end);
  return chain;
}

/** Bind candidates for one path, widest first: its install prefix, node_modules, venv, directory, the path itself. */
export function bindCandidates(path: string): string[] {
  const out: string[] = [];
  const lib = path.indexOf(`${sep}lib${sep}node_modules${sep}`);
  if (lib > 0) out.push(path.slice(0, lib));
  const nm = path.indexOf(`${sep}node_modules${sep}`);
  if (nm > 0) out.push(path.slice(0, nm + `${sep}node_modules`.length));
  const bin = dirname(path);
  if (basename(bin) === 'bin' && isFile(join(dirname(bin), 'pyvenv.cfg'))) out.push(dirname(bin));
  out.push(dirname(path), path);
  return out;
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The interpreter a script's `#!` line names (`#!/usr/bin/env node` → `node`), or null. */
export function shebangProgram(file: string): string | null {
  let head: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(256);
      head = buf.subarray(0, readSync(fd, buf, 0, 256, 0)).toString('latin1');
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  if (!head.startsWith('#!')) return null;
  const words = (head.slice(2).split('\n')[0] ?? '').trim().split(/\s+/).filter(Boolean);
  const [interpreter, ...rest] = words;
  if (!interpreter) return null;
  if (basename(interpreter) !== 'env') return interpreter;
  // env [-S] [-i] [NAME=value]... program
  return rest.find((w) => !w.startsWith('-') && !w.includes('=')) ?? null;
}

function refusalFor(path: string, role: string, view: SandboxView): ProgramRefusal {
  const where = within(path, '/tmp')
    ? 'under /tmp, which is private inside the sandbox'
    : 'in a location uh never exposes to a sandbox';
  return {
    path,
    message: `the ${role} ${path} is ${where}`,
    hint: view.secret(path)
      ? 'install it elsewhere (e.g. /usr/local or an nvm prefix under the home); uh never exposes ~/.ssh, ~/.aws, its cache or state dir'
      : 'install it outside /tmp (e.g. /usr/local, ~/.local, an nvm prefix), or add its directory to UH_ISOLATION_READABLE',
  };
}

/**
 * The binds that make `path` (a program or a path argument, found on the host) visible, following
 * its symlinks and its shebang; `refusal` when a hidden part of it cannot be exposed.
 */
export function exposePath(
  path: string,
  role: string,
  pathVar: string | undefined,
  view: SandboxView,
  depth = 0,
  which: (name: string, pathVar: string | undefined) => string | null = whichOnPath,
): ProgramExposure {
  const readable: string[] = [];
  const chain = symlinkChain(path);
  for (const [i, hop] of chain.entries()) {
    if (!view.hidden(hop)) continue;
    if (view.secret(hop) || within(hop, '/tmp')) return { readable, refusal: refusalFor(hop, role, view) };
    // The hops before the last are links: bind a directory holding them, never the link alone (a
    // bound link shows as its target, and a script found by it would resolve its imports from the wrong place).
    const candidates = bindCandidates(hop).filter((c) => i === chain.length - 1 || c !== hop);
    const safe = candidates.find((c) => !view.holdsSecret(c) && c !== '/');
    if (safe) readable.push(safe);
  }
  const last = chain.at(-1) ?? path;
  const interpreter = depth < 3 && isFile(last) ? shebangProgram(last) : null;
  const found = interpreter === null ? null : interpreter.includes('/') ? interpreter : which(interpreter, pathVar);
  if (found) {
    const inner = exposePath(found, 'interpreter', pathVar, view, depth + 1, which);
    return { readable: [...readable, ...inner.readable], refusal: inner.refusal };
  }
  return { readable, refusal: null };
}

/**
 * What one spawn needs: its program (on `pathVar`, or by path from `cwd`) and each argument that
 * is an absolute path on the host. A program that is not found returns nothing (the spawn reports ENOENT).
 */
export function exposeArgv(
  argv: readonly string[],
  cwd: string,
  pathVar: string | undefined,
  view: SandboxView,
): ProgramExposure {
  const [program, ...args] = argv;
  const readable: string[] = [];
  const found =
    program === undefined ? null : program.includes('/') ? resolve(cwd, program) : whichOnPath(program, pathVar);
  const targets: Array<[string, string]> = found && exists(found) ? [[found, 'program']] : [];
  // `/tmp` itself is there inside too (the private one): only what lies under it is missing.
  const pathArg = (arg: string) => isAbsolute(arg) && !arg.includes('\n') && arg.replace(/\/+$/, '') !== '/tmp';
  for (const arg of args) if (pathArg(arg) && exists(arg)) targets.push([arg, 'path argument']);
  for (const [path, role] of targets) {
    const exposed = exposePath(path, role, pathVar, view);
    readable.push(...exposed.readable);
    if (exposed.refusal) return { readable, refusal: exposed.refusal };
  }
  return { readable, refusal: null };
}

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/** At most this many entries of one PATH directory are followed (a bin dir larger than this is unusual). */
const PATH_DIR_ENTRIES = 2000;

/** The binds for the entries of each hidden PATH directory (what an agent runs from its PATH); never refuses. */
export function exposePathEntries(dirs: readonly string[], pathVar: string | undefined, view: SandboxView): string[] {
  const out = new Set<string>();
  // A bin dir's scripts mostly name the same few interpreters (pyenv's shims: bash): look each up once.
  const found = new Map<string, string | null>();
  const which = (name: string, path: string | undefined) => {
    if (!found.has(name)) found.set(name, whichOnPath(name, path));
    return found.get(name) ?? null;
  };
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir).slice(0, PATH_DIR_ENTRIES);
    } catch {
      continue;
    }
    for (const name of names) {
      const exposed = exposePath(join(dir, name), 'program', pathVar, view, 0, which);
      if (exposed.refusal === null) exposed.readable.forEach((p) => out.add(p));
    }
  }
  return [...out];
}
