/**
 * The per-mission limits of one operation (shared/process/mission-limits.ts): decided once at
 * open (the host's `UH_LIMIT_*` lowered by the mission's `sandbox.limits`, how each holds here),
 * applied to every child of the runtime and the checks (the rlimits' prefix; isolated, the sized
 * `/dev/shm` too: isolation-phase.ts), watched while the runtime runs (limits-watch.ts), and the
 * worktree measured once the agent exited, before the diff reads it. A limit reached ends the run
 * as `failed`, `raw: limit_exceeded:<limit>`, and the receipt's `limits` says which and how much.
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
import type { SpawnGroup } from '../../shared/process/spawn-group.js';
import type { IsolationDecision } from '../sandbox/isolation.js';
import { worktreeUsage } from '../sandbox/worktree-usage.js';
import type { Sandbox } from '../sandbox/worktree.js';
import { hitMessage, type LimitHit } from './limits-watch.js';

export interface RunLimits {
  readonly values: MissionLimits;
  readonly host: LimitHost;
  /** `prlimit … --`, or [] where prlimit is missing. */
  readonly prefix: readonly string[];
  /** The first limit reached (the watcher's, or the worktree walk's after the agent). */
  hit: LimitHit | null;
  /** The worktree as measured after the agent exited (null before, or when it never ran). */
  worktree: { bytes: number; files: number } | null;
}

export function runLimitsFor(
  host: MissionLimits,
  requested: Partial<MissionLimits> | undefined,
  isolation: IsolationDecision,
  path: string | undefined,
): RunLimits {
  const values = effectiveLimits(host, requested);
  const prlimit = whichOnPath('prlimit', path);
  const limitHost: LimitHost = {
    isolated: isolation.use !== null,
    root: process.getuid?.() === 0,
    prlimit: prlimit !== null,
    tmpfsSize: isolation.use?.tmpfsSize ?? false,
  };
  return {
    values,
    host: limitHost,
    prefix: prlimit === null ? [] : rlimitPrefix(prlimit, values, limitHost),
    hit: null,
    worktree: null,
  };
}

/**
 * Unisolated, every child starts under `prefix` (isolated, bwrap puts it inside: bwrap-argv.ts).
 * A program that cannot be found is passed on as is, so the caller still sees its ENOENT.
 */
export function rlimitedSpawn(spawn: SpawnGroup, prefix: readonly string[]): SpawnGroup {
  if (prefix.length === 0) return spawn;
  return (options) => {
    const program = options.argv[0];
    const found =
      program !== undefined &&
      (program.includes('/')
        ? existsSync(resolve(options.cwd, program))
        : whichOnPath(program, options.env.PATH) !== null);
    return spawn(found ? { ...options, argv: [...prefix, ...options.argv] } : options);
  };
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
export function measureWorktree(limits: RunLimits, sandbox: Sandbox): LimitHit | null {
  const bounds = { bytes: limits.values.worktree_bytes, files: limits.values.worktree_files };
  const usage = worktreeUsage(sandbox.path, bounds);
  limits.worktree = { bytes: usage.bytes, files: usage.files };
  if (usage.over === null) return null;
  const hit: LimitHit = { limit: usage.over, observed: usage.over === 'worktree_files' ? usage.files : usage.bytes };
  limits.hit ??= hit;
  return hit;
}

/** The receipt's `limits`. */
export function limitsReceipt(limits: RunLimits): NonNullable<Receipt['limits']> {
  return {
    backend: limitsBackend(limits.host),
    ...limits.values,
    held: limitMechanisms(limits.host),
    exceeded: limits.hit,
    worktree: limits.worktree,
  };
}
