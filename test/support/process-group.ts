import { readdirSync, readFileSync } from 'node:fs';

/** Live (non-zombie) members of a process group, from /proc (Linux). */
export function liveGroupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid pgrp …; comm may contain spaces, so parse after the last ')'.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

/** Waits (polling, 5 s at most) until no live process is left in the group; returns what is left. */
export async function waitGroupGone(pgid: number): Promise<number[]> {
  for (let i = 0; i < 100; i++) {
    const left = liveGroupMembers(pgid);
    if (left.length === 0) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
  return liveGroupMembers(pgid);
}
