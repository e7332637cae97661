/**
 * Runtime process groups that outlive a dead `uh` process. The pipeline records each group it
 * spawns (host, pgid, the leader's start time) in the operation's journal; `uh mission recover`
 * kills the ones still alive on this host. The start time guards against a recycled pid.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';

export const PROCESS_GROUPS_KEY = 'uh_process_groups';

export const ProcessGroupSchema = z.object({ host: z.string(), pgid: z.number().int().positive(), start: z.string() });
export type ProcessGroup = z.infer<typeof ProcessGroupSchema>;

/** The start time of a process in clock ticks since boot (`/proc/<pid>/stat` field 22), or null. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null; // field 22 overall; fields[0] here is field 3 (state)
  } catch {
    return null;
  }
}

export function describeGroup(pid: number): ProcessGroup | null {
  const start = processStart(pid);
  return start === null ? null : { host: hostname(), pgid: pid, start };
}

/** Kill every recorded group still alive here with the same leader; returns the pgids killed. */
export function killLeftoverGroups(journal: Record<string, unknown>): number[] {
  const parsed = z.array(ProcessGroupSchema).safeParse(journal[PROCESS_GROUPS_KEY] ?? []);
  if (!parsed.success) return [];
  const killed: number[] = [];
  for (const group of parsed.data) {
    if (group.host !== hostname() || processStart(group.pgid) !== group.start) continue;
    try {
      process.kill(-group.pgid, 'SIGKILL');
      killed.push(group.pgid);
    } catch {
      // gone in the meantime
    }
  }
  return killed;
}
