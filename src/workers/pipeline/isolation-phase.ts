/**
 * The isolated spawn of one phase (runtime or checks): when the operation's isolation decision
 * is bwrap, every child runs under bubblewrap with a fresh private home and /tmp in
 * `<operation dir>/scratch/<phase>/`, removed when the phase ends. Unisolated, `run.spawn` as is.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SpawnGroup } from '../../shared/process/spawn-group.js';
import { isolatedSpawn, isolationPlan, localRepositoryPath } from '../sandbox/isolation.js';
import type { Sandbox } from '../sandbox/worktree.js';
import type { OperationRun } from './operation-run.js';

export interface PhaseSpawn {
  spawn: SpawnGroup;
  isolated: boolean;
  /** Remove the phase's scratch dir (its processes are gone by then). */
  dispose(): void;
}

export function phaseSpawn(run: OperationRun, sandbox: Sandbox, phase: 'runtime' | 'checks', extra: { writable: string[]; readable?: string[] } = { writable: [] }): PhaseSpawn {
  const { use, status } = run.isolation;
  if (!use) return { spawn: run.spawn, isolated: false, dispose: () => undefined };
  const scratch = join(run.dir, 'scratch', phase);
  const plan = isolationPlan({
    bwrap: use.path,
    worktree: sandbox.path,
    cacheDir: run.options.cacheDir,
    stateDir: run.options.stateDir,
    repositoryPath: localRepositoryPath(run.prepared.mission.repository.url),
    home: run.env.HOME,
    scratch,
    extra: { writable: extra.writable, readable: extra.readable ?? [] },
    path: run.env.PATH,
    network: status.network === 'on',
  });
  return {
    spawn: isolatedSpawn(run.spawn, plan),
    isolated: true,
    dispose: () => rmSync(scratch, { recursive: true, force: true }),
  };
}
