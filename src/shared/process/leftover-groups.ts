/**
 * Runtime process groups that outlive a dead `uh` process. The pipeline records each group it
 * spawns (host, pgid, the leader's start time) in the operation's journal; `uh mission recover`
 * kills the ones still alive on this host. The start time guards against a recycled pid.
 */
import { readdirSync, readFileSync } from 'node:fs';
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

/** The process group of `pid` (`/proc/<pid>/stat` field 5), or null. */
function groupOf(pid: string): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return null;
  }
}

/**
 * The recorded group is still the same group: its leader alive with the recorded start time, or
 * the leader gone (a wrapper that exec'd or exited) while members remain. A pid is never reused
 * while a process group of that id has members, so a leaderless group is still the recorded one.
 */
function sameGroup(group: ProcessGroup): boolean {
  const leader = processStart(group.pgid);
  if (leader !== null) return leader === group.start;
  return readdirSync('/proc').some((entry) => /^\d+$/.test(entry) && groupOf(entry) === group.pgid);
}

/** Kill every recorded group still alive here with the same leader; returns the pgids killed. */
export function killLeftoverGroups(journal: Record<string, unknown>): number[] {
  const parsed = z.array(ProcessGroupSchema).safeParse(journal[PROCESS_GROUPS_KEY] ?? []);
  if (!parsed.success) return [];
  const killed: number[] = [];
  for (const group of parsed.data) {
    if (group.host !== hostname() || !sameGroup(group)) continue;
    try {
      process.kill(-group.pgid, 'SIGKILL');
      killed.push(group.pgid);
    } catch {
      // gone in the meantime
    }
  }
  return killed;
}

/** Recorded groups on other hosts than this one (they cannot be killed from here). */
export function groupsElsewhere(journal: Record<string, unknown>): ProcessGroup[] {
  const parsed = z.array(ProcessGroupSchema).safeParse(journal[PROCESS_GROUPS_KEY] ?? []);
  return parsed.success ? parsed.data.filter((g) => g.host !== hostname()) : [];
}

/**
 * A dead owner's runtime processes: kill the recorded groups alive on this host and say what
 * became of them, for the operation's unknown reason (the operator's record of the agent).
 * `before`: what the caller already killed another way (the phase's cgroups), said first.
 */
export function endOrphanedGroups(journal: Record<string, unknown>, before: readonly string[] = []): string {
  const killed = killLeftoverGroups(journal);
  const elsewhere = groupsElsewhere(journal);
  const parts: string[] = [...before];
  if (killed.length > 0) parts.push(`agent process group(s) ${killed.join(', ')} killed on ${hostname()}`);
  if (elsewhere.length > 0)
    parts.push(
      `agent process group(s) ${elsewhere.map((g) => `${g.pgid}@${g.host}`).join(', ')} could not be killed ` +
        `from ${hostname()}: run \`uh mission recover\` on that host`,
    );
  if (parts.length === 0) parts.push('no agent process left alive');
  return parts.join('; ');
}
