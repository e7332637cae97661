/**
 * The sweep: remove retained sandboxes past their keep-until time, pooled ones idle past their
 * lifetime (through the pool's lock: never one a mission just claimed), and orphans (a directory
 * under the sandboxes root with no record, looked up again right before removal: another process
 * may have just created or renamed it). Runs at start-up of `uh mission run` and workers.
 */
import { existsSync, readdirSync } from 'node:fs';
import { removeTree } from '../../shared/fs/deep-tree.js';
import { join } from 'node:path';
import { discardSandbox } from './sandbox-pool.js';
import { metaPath, readRecords, removeSandbox, sandboxesRoot } from './worktree.js';

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
      if (await discardSandbox(cacheDir, record).catch(() => false)) removed.push(record.path);
    } else kept += 1;
  }
  const known = new Set(records.map((r) => r.name));
  for (const entry of readdirSync(root)) {
    if (entry.startsWith('.') || known.has(entry)) continue;
    const path = join(root, entry);
    // An orphan: no record. Only a sandbox-looking dir (it has a `.git`) is removed.
    if (existsSync(join(path, '.git')) && !existsSync(metaPath(cacheDir, entry))) {
      await removeSandbox(cacheDir, { name: entry, path, mirror: '' }).catch(() => undefined);
      removed.push(path);
    }
  }
  // uh's private dirs whose sandbox is gone.
  const privateRoot = join(root, '.uh');
  if (existsSync(privateRoot)) {
    for (const entry of readdirSync(privateRoot)) {
      if (!existsSync(join(root, entry)) && !known.has(entry)) removeTree(join(privateRoot, entry));
    }
  }
  return { removed, kept };
}
