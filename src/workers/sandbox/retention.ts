/**
 * The sweep: remove retained sandboxes past their keep-until time, and orphans (a directory
 * under the sandboxes root with no record). Runs at start-up of `uh mission run` and workers.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readRecords, removeSandbox, sandboxesRoot } from './worktree.js';

export interface SweepResult {
  removed: string[];
  kept: number;
}

export async function sweepSandboxes(cacheDir: string, now: Date): Promise<SweepResult> {
  const root = sandboxesRoot(cacheDir);
  if (!existsSync(root)) return { removed: [], kept: 0 };
  const records = readRecords(cacheDir);
  const removed: string[] = [];
  let kept = 0;
  for (const record of records) {
    if (Date.parse(record.keep_until) <= now.getTime()) {
      await removeSandbox(cacheDir, record).catch(() => undefined);
      removed.push(record.path);
    } else kept += 1;
  }
  const known = new Set(records.map((r) => r.name));
  for (const entry of readdirSync(root)) {
    if (entry.startsWith('.') || known.has(entry)) continue;
    const path = join(root, entry);
    // An orphan: no record. Only a worktree-looking dir is removed; its `.git` file names the mirror.
    const mirror = mirrorOfWorktree(path);
    if (mirror !== null) {
      await removeSandbox(cacheDir, { name: entry, path, mirror }).catch(() => undefined);
      removed.push(path);
    }
  }
  return { removed, kept };
}

/** `<mirror>` from a worktree's `.git` file (`gitdir: <mirror>/worktrees/<name>`), or null. */
function mirrorOfWorktree(path: string): string | null {
  try {
    const line = readFileSync(join(path, '.git'), 'utf8').trim();
    const match = /^gitdir: (.+)$/.exec(line);
    return match?.[1] ? dirname(dirname(match[1])) : null;
  } catch {
    return null;
  }
}
