import { describe, expect, it } from 'vitest';
import { bwrapArgv } from '../../../src/shared/process/bwrap-argv.js';
import { loadConfig } from '../../../src/shared/config.js';
import { MissionSchema } from '../../../src/shared/contracts/mission.js';
import {
  DEFAULT_LIMITS,
  effectiveLimits,
  limitMechanisms,
  rlimitPrefix,
  type LimitHost,
} from '../../../src/shared/process/mission-limits.js';

const host: LimitHost = { isolated: true, root: false, prlimit: true, tmpfsSize: true, cgroup: null };

describe('mission limits', () => {
  it("a mission's request lowers the host's ceiling and never raises it", () => {
    const limits = effectiveLimits(DEFAULT_LIMITS, { processes: 10, memory_bytes: DEFAULT_LIMITS.memory_bytes * 4 });
    expect(limits.processes).toBe(10);
    expect(limits.memory_bytes).toBe(DEFAULT_LIMITS.memory_bytes);
    expect(effectiveLimits(DEFAULT_LIMITS, undefined)).toEqual(DEFAULT_LIMITS);
  });

  it.each([
    // isolated, root, prlimit, tmpfsSize → processes, memory, shm
    [true, false, true, true, 'rlimit+watcher', 'rlimit+watcher', 'tmpfs'],
    [true, true, true, true, 'watcher', 'rlimit+watcher', 'tmpfs'],
    [false, false, true, true, 'watcher', 'rlimit+watcher', 'none'],
    [true, false, false, false, 'watcher', 'watcher', 'none'],
  ])('isolated %s, root %s, prlimit %s, --size %s: processes %s, memory %s, shm %s', (...row) => {
    const [isolated, root, prlimit, tmpfsSize, processes, memory, shm] = row as [
      boolean,
      boolean,
      boolean,
      boolean,
      string,
      string,
      string,
    ];
    expect(limitMechanisms({ isolated, root, prlimit, tmpfsSize, cgroup: null })).toMatchObject({
      processes,
      memory,
      shm,
    });
  });

  it.each(['cgroup-v2', 'cgroup-v1'] as const)('on %s the kernel holds processes and memory, root or not', (cgroup) => {
    for (const root of [true, false])
      expect(limitMechanisms({ ...host, root, cgroup })).toMatchObject({ processes: 'cgroup', memory: 'cgroup' });
  });

  it('RLIMIT_NPROC only where the count is the sandbox own (isolated, not root); data at twice memory; fsize at the byte limit', () => {
    const limits = { ...DEFAULT_LIMITS, processes: 50, memory_bytes: 100, worktree_bytes: 7 };
    expect(rlimitPrefix('/usr/bin/prlimit', limits, host)).toEqual([
      '/usr/bin/prlimit',
      '--nproc=50',
      '--data=200',
      '--fsize=7',
      '--',
    ]);
    expect(rlimitPrefix('/usr/bin/prlimit', limits, { ...host, root: true })).not.toContain('--nproc=50');
    // Under a cgroup only the per-file size is an rlimit's.
    expect(rlimitPrefix('/usr/bin/prlimit', limits, { ...host, cgroup: 'cgroup-v1' })).toEqual([
      '/usr/bin/prlimit',
      '--fsize=7',
      '--',
    ]);
  });

  it('bwrap gives the child its own sized /dev/shm under a read-only /dev, and the rlimits inside the namespace', () => {
    const plan = {
      bwrap: '/usr/bin/bwrap',
      masked: [],
      home: null,
      tmpfsBytes: 1024,
      readable: [],
      writable: [],
      network: false,
      env: {},
      cwd: '/w',
      shmBytes: 4096,
      limitPrefix: ['/usr/bin/prlimit', '--nproc=5', '--'],
    };
    const argv = bwrapArgv(plan, ['sh']);
    expect(argv.join(' ')).toContain('--dev /dev --proc /proc --remount-ro /dev --size 4096 --tmpfs /dev/shm');
    expect(argv.slice(-5)).toEqual(['--', '/usr/bin/prlimit', '--nproc=5', '--', 'sh']);
    expect(bwrapArgv({ ...plan, shmBytes: null }, ['sh'])).not.toContain('/dev/shm');
  });

  it('the host ceilings come from UH_LIMIT_*; a bad value names the variable', () => {
    expect(loadConfig({}).core.limits).toEqual(DEFAULT_LIMITS);
    expect(loadConfig({ UH_LIMIT_PROCESSES: '64', UH_LIMIT_SHM_BYTES: '1048576' }).core.limits).toMatchObject({
      processes: 64,
      shm_bytes: 1048576,
    });
    expect(() => loadConfig({ UH_LIMIT_MEMORY_BYTES: '0' })).toThrow(
      expect.objectContaining({ details: [expect.stringContaining('UH_LIMIT_MEMORY_BYTES')] }),
    );
  });

  it("a mission's sandbox.limits is strict: known keys, positive integers", () => {
    const mission = (limits: unknown) =>
      MissionSchema.safeParse({
        schema_version: 'uh.mission.v0',
        mission_id: 'm',
        operation_id: 'o',
        title: 't',
        objective: 'o',
        repository: { url: 'https://example.com/r.git' },
        runtime: 'command',
        sandbox: { limits },
      });
    expect(mission({ processes: 10, worktree_files: 5 }).success).toBe(true);
    expect(mission({ processes: 0 }).success).toBe(false);
    expect(mission({ cpus: 2 }).success).toBe(false);
  });
});
