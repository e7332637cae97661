/**
 * The per-mission limits of one operation (shared/process/mission-limits.ts): decided once at
 * open (the host's `UH_LIMIT_*` lowered by the mission's `sandbox.limits`, how each holds here),
 * applied to every child of the runtime and the checks (the rlimits' prefix; isolated, the sized
 * `/dev/shm` too: isolation-phase.ts), watched while the runtime runs (limits-watch.ts), and the
 * worktree measured once the agent exited, before the diff reads it. On a cgroup backend
 * (settings.limitBackend) each phase runs in a cgroup of its own (shared/process/mission-cgroup.ts):
 * its children join it before they exec, the kernel refuses forks past `processes` and OOM-kills at
 * `memory`, the watcher reads those refusals, and at the phase's end everything left in it is
 * killed and the cgroup removed. A limit reached ends the run as `failed`,
 * `raw: limit_exceeded:<limit>`, and the receipt's `limits` says which, how much and what saw it.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Receipt } from '../../shared/contracts/receipt.js';
import type { Outcome } from '../../shared/contracts/runtime-result.js';
import { whichOnPath } from '../../shared/process/bwrap-probe.js';
import {
  effectiveLimits,
  LIMIT_VARIABLES,
  limitMechanisms,
  limitRaw,
  limitsBackend,
  rlimitPrefix,
  type LimitHost,
  type MissionLimits,
} from '../../shared/process/mission-limits.js';
import type { LimitBackendChoice } from '../../shared/process/cgroup-probe.js';
import { createMissionCgroup, type MissionCgroup } from '../../shared/process/mission-cgroup.js';
import type { SpawnGroup, SpawnGroupOptions } from '../../shared/process/spawn-group.js';
import type { IsolationDecision } from '../sandbox/isolation.js';
import type { WorktreeUsage } from '../sandbox/worktree-usage.js';
import { isOverlaySandbox } from '../sandbox/overlay-sandbox.js';
import type { Sandbox } from '../sandbox/worktree.js';
import { hitMessage, type LimitHit } from './limits-watch.js';

export interface RunLimits {
  readonly values: MissionLimits;
  readonly host: LimitHost;
  /** `prlimit … --`, or [] where prlimit is missing or a cgroup backend holds (its join sets the file size). */
  readonly prefix: readonly string[];
  /** The first limit reached (the watcher's, or the worktree walk's after the agent). */
  hit: LimitHit | null;
  /** The worktree as measured after the agent exited (null before, or when it never ran). */
  worktree: { bytes: number; files: number } | null;
  /** The host's backend for processes and memory (a cgroup one, or rlimits with the reason). */
  readonly backend: LimitBackendChoice;
  /** On a cgroup backend: the kernel's refusals, summed over the phases' cgroups. */
  kernel: { forks_refused: number; oom_kills: number } | null;
  /** The cache's scope in the phases' cgroup names (`cgroupScope`): its sweeps end only its own. */
  readonly scope?: string;
}

export function runLimitsFor(
  host: MissionLimits,
  requested: Partial<MissionLimits> | undefined,
  isolation: IsolationDecision,
  path: string | undefined,
  backend: LimitBackendChoice,
): RunLimits {
  const values = effectiveLimits(host, requested);
  const prlimit = whichOnPath('prlimit', path);
  const limitHost: LimitHost = {
    isolated: isolation.use !== null,
    root: process.getuid?.() === 0,
    prlimit: prlimit !== null,
    tmpfsSize: isolation.use?.tmpfsSize ?? false,
    cgroup: backend.kind === 'rlimit' ? null : backend.kind,
  };
  return {
    values,
    host: limitHost,
    // On a cgroup backend the cgroup holds processes and memory, and its joining shell the file size.
    prefix: prlimit === null || limitHost.cgroup !== null ? [] : rlimitPrefix(prlimit, values, limitHost),
    hit: null,
    worktree: null,
    backend,
    kernel: backend.kind === 'rlimit' ? null : { forks_refused: 0, oom_kills: 0 },
  };
}

/** A program that cannot be found stays unwrapped, so the caller still sees its ENOENT. */
function programFound(options: SpawnGroupOptions): boolean {
  const program = options.argv[0];
  return (
    program !== undefined &&
    (program.includes('/')
      ? existsSync(resolve(options.cwd, program))
      : whichOnPath(program, options.env.PATH) !== null)
  );
}

/**
 * Unisolated, every child starts under `prefix` (isolated, bwrap puts it inside: bwrap-argv.ts).
 * A program that cannot be found is passed on as is, so the caller still sees its ENOENT.
 */
export function rlimitedSpawn(spawn: SpawnGroup, prefix: readonly string[]): SpawnGroup {
  if (prefix.length === 0) return spawn;
  return (options) => spawn(programFound(options) ? { ...options, argv: [...prefix, ...options.argv] } : options);
}

/**
 * The phase's cgroup on a cgroup backend (null on rlimits): made with the mission's processes and
 * memory limits; a cgroup that cannot be made throws (the run fails, never runs unlimited).
 */
export function openPhaseCgroup(limits: RunLimits, phase: string, operationId: string): MissionCgroup | null {
  if (limits.backend.kind === 'rlimit') return null;
  const scope = limits.scope === undefined ? {} : { scope: limits.scope };
  return createMissionCgroup(limits.backend, { phase, operationId, ...scope }, limits.values);
}

/** Every child of the phase joins `cgroup` before it execs (outside bwrap: bwrap and all inside are in it). */
export function cgroupSpawn(spawn: SpawnGroup, cgroup: MissionCgroup | null): SpawnGroup {
  if (cgroup === null) return spawn;
  return (options) => spawn(programFound(options) ? { ...options, argv: [...cgroup.join, ...options.argv] } : options);
}

/** The limit the kernel refused in `cgroup` so far (a refused fork, an OOM kill), or null. */
export function cgroupHit(limits: RunLimits, cgroup: MissionCgroup): LimitHit | null {
  return kernelHit(limits, cgroup.events());
}

function kernelHit(limits: RunLimits, events: ReturnType<MissionCgroup['events']>): LimitHit | null {
  if (events.oomKills > 0)
    return { limit: 'memory', observed: Math.max(events.memoryPeak ?? 0, limits.values.memory_bytes), by: 'cgroup' };
  if (events.forksRefused > 0) return { limit: 'processes', observed: limits.values.processes, by: 'cgroup' };
  return null;
}

/** End the phase's cgroup: everything in it killed, the cgroup removed, its refusals counted; the hit if any. */
export async function closePhaseCgroup(limits: RunLimits, cgroup: MissionCgroup | null): Promise<LimitHit | null> {
  if (cgroup === null) return null;
  const events = await cgroup.close();
  if (limits.kernel) {
    limits.kernel.forks_refused += events.forksRefused;
    limits.kernel.oom_kills += events.oomKills;
  }
  return kernelHit(limits, events);
}

/** The outcome of a run that reached a limit. */
export function limitOutcome(hit: LimitHit, limits: MissionLimits): Outcome {
  return {
    status: 'failed',
    raw: limitRaw(hit.limit),
    message: hitMessage(hit, limits),
    hint: `the host's ceiling is ${LIMIT_VARIABLES[hit.limit]} (docs/security.md#limits); a mission may lower it with sandbox.limits, never raise it`,
    timed_out: false,
  };
}

/**
 * The worktree after the agent: over a bound, the run fails naming it (the watcher may have
 * sampled between the agent's last writes), and the diff never reads the tree.
 */
/** Record the worktree's measure (`tree-work.ts` took it) on the run; the bound it passed, or null. */
export function recordWorktree(limits: RunLimits, usage: WorktreeUsage): LimitHit | null {
  limits.worktree = { bytes: usage.bytes, files: usage.files };
  if (usage.over === null) return null;
  const observed = usage.over === 'worktree_files' ? usage.files : usage.bytes;
  const hit: LimitHit = { limit: usage.over, observed, by: 'walk' };
  limits.hit ??= hit;
  return hit;
}

/** The receipt's `limits`. */
export function limitsReceipt(limits: RunLimits): NonNullable<Receipt['limits']> {
  return {
    backend: limitsBackend(limits.host),
    backend_reason: limits.backend.reason,
    ...limits.values,
    held: limitMechanisms(limits.host),
    exceeded: limits.hit,
    worktree: limits.worktree,
    ...(limits.kernel ? { kernel: { ...limits.kernel } } : {}),
  };
}

/**
 * Where a phase's writes to the sandbox land, for the limits watch: the worktree, or an overlay
 * sandbox's upper layer (on the host its mount point is empty; the upper layer holds everything
 * the mission wrote, which is what the bounds are there to stop).
 */
export function writesOf(sandbox: Sandbox): string {
  return isOverlaySandbox(sandbox) ? sandbox.layers.upper : sandbox.path;
}
