/**
 * What cow-missions.ts and cow-fleet.ts share: the run's settings, `uh` through the built CLI, the
 * mission (the command runtime appending a line to README.md) and the check of its receipt.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Compiled to dist/bench/: the repository root is two levels up.
export const UH = fileURLToPath(new URL('../../bin/uh.js', import.meta.url));

/** Everything one run of the suite shares. */
export interface CowRun {
  root: string;
  repo: string;
  cacheDir: string;
  backend: string;
  /** The environment of every uh process. */
  env: NodeJS.ProcessEnv;
  /** Every `git worktree add` of the tree timed in this run (ms). */
  adds: number[];
}

export interface UhResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** `node bin/uh.js …args` with the run's environment (plus `extra`); never throws on an exit code. */
export function uh(run: CowRun, args: string[], extra: NodeJS.ProcessEnv = {}): Promise<UhResult> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [UH, ...args],
      { cwd: run.root, env: { ...run.env, ...extra }, maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr, ms: performance.now() - t0 });
      },
    );
  });
}

const EDIT = ['sh', '-c', 'echo edited >> README.md'];

/**
 * A mission file at the run's repository: the command runtime appends a line to README.md. With
 * `runtimes` (ids of command manifests, `commandManifests`), a batch mission over them.
 */
export function missionFile(run: CowRun, id: string, runtimes?: string[]): string {
  const path = join(run.root, `mission-${id}.json`);
  const mission = {
    schema_version: 'uh.mission.v0',
    mission_id: 'bench-cow',
    operation_id: id,
    title: 'bench',
    objective: 'append one line to README.md',
    repository: { url: run.repo, ref: 'main' },
    ...(runtimes
      ? { runtime: runtimes }
      : { runtime: 'command', runtime_config_overrides: { command: { argv: EDIT } } }),
    timeout_seconds: 600,
  };
  writeFileSync(path, JSON.stringify(mission));
  return path;
}

/** Manifests in `stateDir` of runtimes `ids`, each the command runtime making the same edit. */
export function commandManifests(stateDir: string, ids: string[]): void {
  mkdirSync(join(stateDir, 'adapters'), { recursive: true });
  for (const id of ids) {
    const manifest = {
      schema_version: 'uh.adapter.v0',
      id,
      name: `the command runtime as ${id}`,
      version: '0.1.0',
      runtime_kind: 'command',
      capabilities: { non_interactive_run: true },
      input_formats: ['uh.mission.v0'],
      output_formats: ['uh.runtime-result.v0'],
      runtime_config: { argv: EDIT, prompt_via: 'stdin' },
    };
    writeFileSync(join(stateDir, 'adapters', `${id}.yaml`), `${JSON.stringify(manifest, null, 2)}\n`);
  }
}

export interface Receipt {
  operation_id: string;
  status: string;
  changed_files: Array<{ path: string }>;
  sandbox?: { backend?: string };
  timings_ms: Record<string, number>;
}

const BACKEND_NAME: Record<string, string> = { overlay: 'overlay', worktree: 'git-worktree' };

/** Throws unless the receipt is a completed run that changed README.md only, on the run's backend. */
export function checkReceipt(run: CowRun, receipt: Receipt): Receipt {
  const files = receipt.changed_files.map((f) => f.path).join(',');
  if (receipt.status !== 'completed' || files !== 'README.md')
    throw new Error(`${receipt.operation_id}: ${receipt.status}, changed ${files || 'nothing'}`);
  const want = BACKEND_NAME[run.backend];
  if (want !== undefined && receipt.sandbox?.backend !== want)
    throw new Error(`${receipt.operation_id}: made by ${receipt.sandbox?.backend ?? '?'}, not ${want}`);
  return receipt;
}
