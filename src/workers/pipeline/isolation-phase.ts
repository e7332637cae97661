/**
 * The isolated spawn of one phase (runtime or checks): when the operation's isolation decision
 * is bwrap, every child runs under bubblewrap with a fresh private home and /tmp, tmpfs mounts
 * of its own namespace capped at `isolationTmpfsBytes` (they leave nothing on the host to
 * remove), its own `/dev/shm` of the mission's size, the mission's rlimits (limits-phase.ts), its
 * program and what that needs visible read-only (program-paths.ts). Unisolated, `run.spawn` under
 * the rlimits. On a cgroup backend every child joins the phase's cgroup first (bwrap included, so
 * all of the sandbox is in it).
 */
import type { MissionCgroup } from '../../shared/process/mission-cgroup.js';
import type { SpawnGroup } from '../../shared/process/spawn-group.js';
import {
  isolatedSpawn,
  isolationPlan,
  isolationView,
  localRepositoryPath,
  type IsolationScope,
} from '../sandbox/isolation.js';
import type { ProgramRefusal } from '../sandbox/program-paths.js';
import { gitDirSpec, type Sandbox } from '../sandbox/worktree.js';
import { isOverlaySandbox } from '../sandbox/overlay-sandbox.js';
import type { OperationRun } from './operation-run.js';
import { cgroupSpawn, rlimitedSpawn } from './limits-phase.js';

export interface PhaseSpawn {
  spawn: SpawnGroup;
  isolated: boolean;
  /** The first program (or path argument) the sandbox could not show, so its child was never started. */
  refusal: () => ProgramRefusal | null;
}

export function phaseSpawn(
  run: OperationRun,
  sandbox: Sandbox,
  extra: { writable: string[]; readable?: string[]; checks?: boolean } = { writable: [] },
  cgroup: MissionCgroup | null = null,
): PhaseSpawn {
  const { use, status } = run.isolation;
  const joined = cgroupSpawn(run.spawn, cgroup);
  if (!use) return { spawn: rlimitedSpawn(joined, run.limits.prefix), isolated: false, refusal: () => null };
  const scope: IsolationScope = {
    bwrap: use.path,
    worktree: sandbox.path,
    cacheDir: run.settings.cacheDir,
    stateDir: run.settings.stateDir,
    repositoryPath: localRepositoryPath(run.prepared.mission.repository.url),
    home: run.env.HOME,
    tmpfsBytes: use.tmpfsSize ? run.settings.isolation.tmpfsBytes : null,
    gitReadable: [gitDirSpec(sandbox.mirror, sandbox.commit, false).alternates],
    extra: { writable: extra.writable, readable: extra.readable ?? [] },
    path: run.env.PATH,
    network: status.network === 'host',
    egress: (extra.checks ? run.egress?.checks : run.egress?.runtime)?.bridge ?? null,
    operatorReadable: run.settings.isolation.readable,
    ownSecrets: [
      run.settings.receiptKey.keyFile,
      ...(run.settings.redisPasswordFile ? [run.settings.redisPasswordFile] : []),
      ...(run.settings.secretsDir ? [run.settings.secretsDir] : []),
    ],
  };
  const plan = {
    ...isolationPlan(scope),
    shmBytes: use.tmpfsSize ? run.limits.values.shm_bytes : null,
    limitPrefix: run.limits.prefix,
  };
  let refused: ProgramRefusal | null = null;
  const onRefuse = (r: ProgramRefusal) => {
    refused ??= r;
  };
  return {
    spawn: isolatedSpawn(joined, plan, {
      view: isolationView(scope, plan),
      onRefuse,
      ...(isOverlaySandbox(sandbox) ? { overlay: { unshare: sandbox.unshare, layers: sandbox.layers } } : {}),
    }),
    isolated: true,
    refusal: () => refused,
  };
}
