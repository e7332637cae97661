/**
 * `uh doctor`'s limits lines: which backend holds processes and memory here and why
 * (`UH_LIMIT_BACKEND`, shared/process/cgroup-probe.ts), then each per-mission limit, its host
 * value and how it holds on this host (shared/process/mission-limits.ts). Informative: never a
 * core finding, except `UH_LIMIT_BACKEND=cgroup` on a host with no cgroup (no mission would start).
 */
import type { UhConfig } from '../../shared/config.js';
import { chooseLimitBackend, type LimitBackendChoice } from '../../shared/process/cgroup-probe.js';
import { probeBwrap, whichOnPath } from '../../shared/process/bwrap-probe.js';
import {
  LIMIT_NAMES,
  LIMIT_VARIABLES,
  limitMechanisms,
  limitValue,
  type LimitMechanism,
  type LimitName,
} from '../../shared/process/mission-limits.js';

export interface LimitFinding {
  what: string;
  ok: boolean;
  detail: string;
  hint?: string;
  core: boolean;
}

const HOW: Record<LimitName, Partial<Record<LimitMechanism, string>>> = {
  processes: {
    cgroup: "the phase's cgroup pids.max: the kernel refuses the fork past it (root included)",
    'rlimit+watcher': "RLIMIT_NPROC in the sandbox's user namespace, and the watcher",
    watcher: 'the watcher only (sampled every 200 ms: as root or unisolated RLIMIT_NPROC cannot count one mission)',
  },
  memory: {
    cgroup: "the phase's cgroup memory limit (no swap past it): the kernel OOM-kills at it",
    'rlimit+watcher': 'RLIMIT_DATA at twice the limit per process, the watcher holding the sum',
    watcher: 'the watcher only (prlimit missing)',
  },
  shm: {
    tmpfs: "the sandbox's own /dev/shm, a tmpfs of that size (/dev read-only)",
    none: "none: unisolated (or bwrap without --size) the agent shares the host's /dev/shm",
  },
  worktree_bytes: {
    'rlimit+watcher': 'RLIMIT_FSIZE per file, the watcher, and a walk after the agent exits',
    watcher: 'the watcher and a walk after the agent exits (prlimit missing)',
  },
  worktree_files: { watcher: 'the watcher and a walk after the agent exits' },
};

/** Where the backend's cgroups are made. */
function cgroupWhere(backend: LimitBackendChoice): string {
  if (backend.kind === 'cgroup-v2') return ` (one cgroup per phase under ${backend.parent})`;
  if (backend.kind === 'cgroup-v1') return ` (one cgroup per phase under ${backend.pids} and ${backend.memory})`;
  return '';
}

export function limitsFindings(config: UhConfig): LimitFinding[] {
  const probe = config.core.isolation === 'off' ? null : probeBwrap(config.childEnv.PATH);
  const prlimit = whichOnPath('prlimit', config.childEnv.PATH) !== null;
  const backend = chooseLimitBackend(config.core.limitBackend);
  const cgroup = backend.kind === 'rlimit' ? null : backend.kind;
  const held = limitMechanisms({
    isolated: probe?.ok ?? false,
    root: process.getuid?.() === 0,
    prlimit,
    tmpfsSize: probe?.ok ? probe.tmpfsSize : false,
    cgroup,
  });
  const insisted = config.core.limitBackend === 'cgroup' && cgroup === null;
  const rlimits = prlimit ? 'rlimit (prlimit)' : 'none (prlimit missing): the watcher only';
  const findings: LimitFinding[] = [
    {
      what: 'limits backend',
      ok: cgroup !== null || (prlimit && !insisted),
      detail: `${cgroup ?? rlimits}: ${backend.reason}${cgroupWhere(backend)}${
        insisted ? '; UH_LIMIT_BACKEND=cgroup: no mission can start here' : ''
      }`,
      hint: insisted
        ? 'delegate a cgroup v2 subtree to uh (systemd Delegate=yes) or set UH_LIMIT_BACKEND=auto'
        : 'delegate a cgroup (docs/security.md#limits), or install util-linux (prlimit)',
      core: insisted,
    },
  ];
  for (const name of LIMIT_NAMES) {
    const how = HOW[name][held[name]] ?? held[name];
    findings.push({
      what: `limit ${name}`,
      ok: held[name] !== 'none',
      detail: `${limitValue(config.core.limits, name)} (${LIMIT_VARIABLES[name]}): ${how}`,
      hint: 'run isolated with bubblewrap 0.7 or newer (docs/security.md#limits)',
      core: false,
    });
  }
  return findings;
}
