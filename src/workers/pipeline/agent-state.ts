/**
 * Writable agent state under isolation (docs/security.md "Agent state"). An adapter's
 * `isolation()` names the state locations its agent was configured with (`HOME`, `XDG_DATA_HOME`,
 * `CODEX_HOME`… in its `env`: name → configured directory). For each, the operation gets its own
 * directory `<operation dir>/agent-state/<NAME>`, seeded with a copy of the configured one (never
 * the secret locations inside it, at most `SEED_CAP_BYTES`), bound writable into the sandbox, and
 * the runtime's children see `NAME` pointing at it. The configured directory is never written; the
 * copy is removed when the runtime phase ends, so no agent login or cache outlives the run among
 * the operation's artifacts.
 */
import { cpSync, existsSync, lstatSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
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
    // uh's own dirs are never copied in, nor a home's secrets (~/.ssh …) or installs (~/.nvm …), whichever home this is.
    const inside = ownDirs.filter((d) => d.startsWith(`${seed}/`)).map((d) => relative(seed, d));
    if (ownDirs.some((d) => seed === d || seed.startsWith(`${d}/`)))
      notes.push(`${name}: ${seed} is uh's own directory, not seeded`);
    else if (isDir(seed)) {
      const note = seedCopy(seed, dest, [...HOME_SECRETS, ...HOME_INSTALLS, ...inside], SEED_CAP_BYTES);
      if (note) notes.push(`${name}: ${note}`);
    }
  }
  return {
    writable: Object.values(env),
    env,
    notes,
    dispose: () => rmSync(root, { recursive: true, force: true }),
  };
}

/**
 * A spawn whose children see each state variable pointing at the operation's copy (where it named
 * the configured one), and any other variable naming one path inside a configured directory (codex's
 * `TMPDIR=$CODEX_HOME/tmp`) pointing at the same path inside the copy when the copy has it.
 */
export function agentStateSpawn(
  spawn: SpawnGroup,
  state: Readonly<Record<string, string>>,
  copies: Readonly<Record<string, string>>,
): SpawnGroup {
  const trim = (p: string) => p.replace(/\/+$/, '');
  return (options) => {
    const env = { ...options.env };
    for (const [name, seed] of Object.entries(state)) {
      const copy = copies[name];
      if (!copy) continue;
      if (trim(env[name] ?? '') === trim(seed)) env[name] = copy;
      for (const [other, value] of Object.entries(env)) {
        if (other === name || !value?.startsWith(`${trim(seed)}/`) || value.includes(':')) continue;
        const moved = copy + value.slice(trim(seed).length);
        if (existsSync(moved)) env[other] = moved; // a path the copy has (never an install left out of it)
      }
    }
    return spawn({ ...options, env });
  };
}
