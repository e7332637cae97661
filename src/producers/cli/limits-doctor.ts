/**
 * `uh doctor`'s limits lines: each per-mission limit, its host value and how it holds on this
 * host (shared/process/mission-limits.ts), and whether cgroup v2 is delegated here. Informative:
 * never a core finding.
 */
import type { UhConfig } from '../../shared/config.js';
import { probeCgroupV2 } from '../../shared/process/cgroup-probe.js';
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
    'rlimit+watcher': "RLIMIT_NPROC in the sandbox's user namespace, and the watcher",
    watcher: 'the watcher only (sampled every 200 ms: as root or unisolated RLIMIT_NPROC cannot count one mission)',
  },
  memory: {
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

export function limitsFindings(config: UhConfig): LimitFinding[] {
  const probe = config.core.isolation === 'off' ? null : probeBwrap(config.childEnv.PATH);
  const prlimit = whichOnPath('prlimit', config.childEnv.PATH) !== null;
  const held = limitMechanisms({
    isolated: probe?.ok ?? false,
    root: process.getuid?.() === 0,
    prlimit,
    tmpfsSize: probe?.ok ? probe.tmpfsSize : false,
  });
  const cgroup = probeCgroupV2();
  const findings: LimitFinding[] = [
    {
      what: 'limits backend',
      ok: prlimit,
      detail: `${prlimit ? 'rlimit (prlimit)' : 'none (prlimit missing): the watcher only'}; cgroup v2 ${
        cgroup.delegated ? `delegated at ${cgroup.path}, not used by uh yet` : `not delegated: ${cgroup.reason}`
      }`,
      hint: 'install util-linux (prlimit)',
      core: false,
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
