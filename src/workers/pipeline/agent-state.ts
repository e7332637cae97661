/**
 * Writable agent state under isolation (docs/security.md "Agent state"). An adapter's
 * `isolation()` names the state locations its agent was configured with (`HOME`, `XDG_DATA_HOME`,
 * `CODEX_HOME`… in its `env`: name → configured directory). For each, the operation gets its own
 * directory `<operation dir>/agent-state/<NAME>`, seeded with a copy of the configured one (never
 * the secret locations inside it, at most `SEED_CAP_BYTES`), bound writable into the sandbox, and
 * the runtime's children see `NAME` pointing at it. The configured directory is never written; the
 * copy is removed when the runtime phase ends, so no agent login or cache outlives the run among
 * the operation's artifacts.
 *
 * A `persistent` declaration (an agent that keeps its login, threads or caches between runs: pi,
 * codex) gets instead one directory per worker state dir × runtime × tenant (× configured directory),
 * `<stateDir>/agent-homes/<runtime>/<tenant>/<NAME>-<hash of the configured directory>` (0700),
 * seeded once the same way (a later change of the configured directory is not copied) and kept for
 * that tenant's next missions; another tenant's mission never sees it, and the configured directory
 * (the worker user's real home) is never written either.
 */
import { chmodSync, cpSync, existsSync, lstatSync, renameSync, rmSync, statSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { dirname, join, relative } from 'node:path';
import { makeDir } from '../../shared/fs/make-dir.js';
import type { SpawnGroup } from '../../shared/process/spawn-group.js';
import { HOME_SECRETS } from '../sandbox/program-paths.js';

/** A seed larger than this is copied only up to it (an agent's config, login and small caches fit). */
export const SEED_CAP_BYTES = 256 * 1024 * 1024;

/**
 * Where version managers and package managers install programs under a home (nvm, volta, fnm,
 * asdf, pnpm, bun, cargo, pyenv) and npm's download cache: installs, not agent state, so a seeded
 * home never copies them (an nvm prefix is hundreds of MB; each mission copied it). The agent's own
 * program stays visible read-only at its real path (program-paths.ts), which is where it runs from.
 */
export const HOME_INSTALLS = [
  '.nvm',
  '.volta',
  '.fnm',
  '.asdf',
  '.local/share/fnm',
  '.local/share/pnpm',
  '.bun',
  '.cargo',
  '.rustup',
  '.pyenv',
  '.npm',
];

export interface AgentState {
  /** The state directories, bound writable. */
  writable: string[];
  /** Env name → the operation's copy. */
  env: Record<string, string>;
  /** What could not be seeded, for the log (name: why). */
  notes: string[];
  dispose(): void;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Copy `seed` into `dest`: regular files, links and dirs, no secret location, at most `cap` bytes. */
function seedCopy(seed: string, dest: string, never: readonly string[], cap: number): string | null {
  let bytes = 0;
  let capped = false;
  cpSync(seed, dest, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (src) => {
      const rel = relative(seed, src);
      if (rel !== '' && never.some((s) => rel === s || rel.startsWith(`${s}/`))) return false;
      const st = lstatSync(src, { throwIfNoEntry: false });
      if (!st || !(st.isFile() || st.isDirectory() || st.isSymbolicLink())) return false;
      if (st.isFile()) bytes += st.size;
      if (bytes > cap) capped = true;
      return !capped || st.isDirectory();
    },
  });
  return capped ? `seeded only the first ${cap} bytes of ${seed}` : null;
}

/** Seed `dest` from `seed` as the exclusions say (uh's own dirs, a home's secrets and installs, the cap). */
function seedInto(name: string, seed: string, dest: string, ownDirs: readonly string[], notes: string[]): void {
  // uh's own dirs are never copied in, nor a home's secrets (~/.ssh …) or installs (~/.nvm …), whichever home this is.
  const inside = ownDirs.filter((d) => d.startsWith(`${seed}/`)).map((d) => relative(seed, d));
  if (ownDirs.some((d) => seed === d || seed.startsWith(`${d}/`)))
    notes.push(`${name}: ${seed} is uh's own directory, not seeded`);
  else if (isDir(seed)) {
    const note = seedCopy(seed, dest, [...HOME_SECRETS, ...HOME_INSTALLS, ...inside], SEED_CAP_BYTES);
    if (note) notes.push(`${name}: ${note}`);
  }
}

/** Make the state dirs of one operation (`state`: env name → configured directory, absolute). */
export function prepareAgentState(
  operationDir: string,
  state: Readonly<Record<string, string>>,
  ownDirs: readonly string[],
): AgentState {
  const root = join(operationDir, 'agent-state');
  const env: Record<string, string> = {};
  const notes: string[] = [];
  for (const [name, seed] of Object.entries(state)) {
    const dest = join(root, name);
    makeDir(dest, 0o700);
    env[name] = dest;
    seedInto(name, seed, dest, ownDirs, notes);
  }
  return {
    writable: Object.values(env),
    env,
    notes,
    dispose: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** A runtime or tenant name as one path component (never `..` nor a slash). */
function component(name: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name) ? name : encodeURIComponent(name).replace(/^\./, '%2E');
}

/** Where a tenant's persistent state of one runtime lives on this worker. */
export function agentHomesDir(stateDir: string, runtime: string, tenant: string): string {
  return join(stateDir, 'agent-homes', component(runtime), component(tenant));
}

/**
 * The persistent state dirs of `runtime` for `tenant` (declared `persistent`): made and seeded on
 * the first mission (into a private name, then renamed in place, so two first missions at once
 * leave one seeded directory), kept afterwards; `dispose` keeps them.
 */
export function preparePersistentState(
  stateDir: string,
  owner: { runtime: string; tenant: string },
  state: Readonly<Record<string, string>>,
  ownDirs: readonly string[],
): AgentState {
  const root = agentHomesDir(stateDir, owner.runtime, owner.tenant);
  const env: Record<string, string> = {};
  const notes: string[] = [];
  for (const [name, seed] of Object.entries(state)) {
    // Keyed by the configured directory too: another configuration of the runtime gets its own seed.
    const dest = join(root, `${component(name)}-${createHash('sha256').update(seed).digest('hex').slice(0, 12)}`);
    env[name] = dest;
    if (isDir(dest)) continue;
    makeDir(dirname(dest), 0o700);
    const fresh = `${dest}.seed-${randomBytes(6).toString('hex')}`;
    makeDir(fresh, 0o700);
    seedInto(name, seed, fresh, ownDirs, notes);
    chmodSync(fresh, 0o700);
    try {
      renameSync(fresh, dest);
    } catch {
      rmSync(fresh, { recursive: true, force: true }); // another first mission seeded it meanwhile
    }
  }
  return { writable: Object.values(env), env, notes, dispose: () => undefined };
}

/**
 * A spawn whose children see each state variable pointing at the operation's copy (where it named
 * the configured one), and any other variable naming one path inside a configured directory (codex's
 * `TMPDIR=$CODEX_HOME/tmp`) pointing at the same path inside the copy when the copy has it.
 * `persistent`: a variable the child's env leaves unset is set to the copy as well.
 */
export function agentStateSpawn(
  spawn: SpawnGroup,
  state: Readonly<Record<string, string>>,
  copies: Readonly<Record<string, string>>,
  persistent = false,
): SpawnGroup {
  const trim = (p: string) => p.replace(/\/+$/, '');
  return (options) => {
    const env = { ...options.env };
    for (const [name, seed] of Object.entries(state)) {
      const copy = copies[name];
      if (!copy) continue;
      // A persistent declaration names the agent's default location too (`~/.codex`): unset, it is set.
      if (trim(env[name] ?? '') === trim(seed) || (persistent && !env[name])) env[name] = copy;
      for (const [other, value] of Object.entries(env)) {
        if (other === name || !value?.startsWith(`${trim(seed)}/`) || value.includes(':')) continue;
        const moved = copy + value.slice(trim(seed).length);
        if (existsSync(moved)) env[other] = moved; // a path the copy has (never an install left out of it)
      }
    }
    return spawn({ ...options, env });
  };
}
