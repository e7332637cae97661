/**
 * The cache's retention policy, as a plan (what would be freed, with sizes) and its application.
 * `uh gc --dry-run` prints the plan; every worker applies it at start and every
 * `UH_GC_INTERVAL_MS`. In order:
 *   1. sandboxes past keep_until, and `active` sandboxes whose operation has settled (its owner
 *      died; recover or the owner watch settled it) — never one whose operation runs or is unknown;
 *   2. orphan worktrees (a sandbox dir without a record), pruned under the mirror lock;
 *   3. mirrors unused for `UH_MIRROR_IDLE_DAYS` that no remaining sandbox uses;
 *   4. the cap (`UH_CACHE_CAP_BYTES`): pooled (warm) sandboxes first, then the oldest kept sandboxes,
 *      then idle mirrors, oldest first;
 *   5. settled operation dirs older than `UH_OPERATION_RETENTION_DAYS` (never running or unknown);
 *   6. base checkouts of overlay sandboxes (`overlay-base.ts`) that no live sandbox leases:
 *      made more than `UH_MIRROR_IDLE_DAYS` ago, or, under the cap, right after the pooled
 *      sandboxes (a base is the overlay backend's warm state); a lease taken since the plan keeps it;
 *   7. derived base-commit facts (`derived/base-facts/`: tree and ignore rules per commit) written
 *      more than `UH_MIRROR_IDLE_DAYS` ago: a diff that needs one again recomputes it (two git
 *      processes) and a listing whose rules file vanished lists again from a scratch copy.
 * Then uh's phase cgroups whose owning process is gone (a crashed worker's) are emptied and removed.
 * Sandboxes are removed through the sandbox modules (discardSandbox: a pooled one under the pool's
 * lock, never one a mission claimed meanwhile), never by path arithmetic. Pooled sandboxes expire
 * like kept ones: their keep_until is the end of their idle lifetime.
 */
import { existsSync, lstatSync, readdirSync, statSync, statfsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { cgroupScope, sweepStaleCgroups } from '../../shared/process/mission-cgroup.js';
import { removeTree, treeBytes } from '../../shared/fs/deep-tree.js';
import { withFileLock } from './file-lock.js';
import { mirrorLockDir } from './mirror-cache.js';
import { sweepSandboxes } from './retention.js';
import { discardSandbox } from './sandbox-pool.js';
import { collectBase, unusedBases } from './overlay-base.js';
import { readRecords, sandboxPaths, type SandboxRecord } from './worktree.js';
import { baseFactsDir } from '../verification/base-ignore.js';

export type GcKind =
  | 'sandbox_expired'
  | 'sandbox_settled'
  | 'sandbox_cap'
  | 'base_idle'
  | 'base_cap'
  | 'mirror_idle'
  | 'mirror_cap'
  | 'operation_dir'
  | 'facts_idle';
export interface GcItem {
  kind: GcKind;
  path: string;
  bytes: number;
  operation_id?: string;
  /** For sandboxes: the record to remove through the sandbox module. */
  record?: SandboxRecord;
}

export interface GcPolicy {
  now: Date;
  mirrorIdleDays: number;
  operationRetentionDays: number;
  /** 0 = no cap. */
  cacheCapBytes: number;
}

/** What the policy asks of the operation records: its state, or null when unknown here. */
export interface GcPorts {
  operationState: (operationId: string) => Promise<string | null>;
}

const DAY = 24 * 3600 * 1000;

/** Bytes under `path` (files and symlinks; directories walked without following links), however deep. */
export function dirBytes(path: string): number {
  return treeBytes(path);
}

/** What removing a sandbox frees: its worktree, and for an overlay one its upper layer (on the host the mount point is empty). */
function sandboxBytes(record: SandboxRecord): number {
  const own = dirBytes(record.path);
  if (record.backend !== 'overlay') return own;
  const { privateDir, index } = sandboxPaths(record.path);
  // uh's index there is a hard link to the base's (overlay-sandbox.ts): the base's bytes, not the sandbox's.
  const linked = statSync(index, { throwIfNoEntry: false });
  return own + dirBytes(privateDir) - (linked && linked.nlink > 1 ? linked.size : 0);
}

function mirrors(cacheDir: string): Array<{ path: string; usedAt: number }> {
  const root = join(cacheDir, 'mirrors');
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((e) => e.endsWith('.git'))
    .map((e) => {
      const path = join(root, e);
      const stamps = [path, join(path, 'FETCH_HEAD'), join(path, 'worktrees')]
        .filter(existsSync)
        .map((p) => statSync(p).mtimeMs);
      return { path, usedAt: Math.max(...stamps) };
    });
}

async function sandboxItems(cacheDir: string, policy: GcPolicy, ports: GcPorts): Promise<GcItem[]> {
  const items: GcItem[] = [];
  for (const record of readRecords(cacheDir)) {
    const item = { path: record.path, bytes: sandboxBytes(record), operation_id: record.operation_id, record };
    if (Date.parse(record.keep_until) <= policy.now.getTime()) items.push({ kind: 'sandbox_expired', ...item });
    else if (record.state === 'active' && (await ports.operationState(record.operation_id)) === 'finished')
      items.push({ kind: 'sandbox_settled', ...item });
  }
  return items;
}

/** The cap: pooled sandboxes first, then the oldest retained ones, then mirrors no other sandbox uses, oldest first. */
function capItems(cacheDir: string, policy: GcPolicy, freed: Set<string>): GcItem[] {
  if (policy.cacheCapBytes <= 0) return [];
  const kept = readRecords(cacheDir).filter((r) => !freed.has(r.path));
  // A pooled sandbox comes before every mirror in the list: a mirror is reached only once they are dropped.
  const idleMirrors = mirrors(cacheDir).filter(
    (m) => !freed.has(m.path) && !kept.some((r) => r.mirror === m.path && r.state !== 'pooled'),
  );
  const oldest = (a: SandboxRecord, b: SandboxRecord) => Date.parse(a.created_at) - Date.parse(b.created_at);
  const sandboxes = [
    ...kept.filter((r) => r.state === 'pooled').sort(oldest),
    ...kept.filter((r) => r.state === 'retained').sort(oldest),
  ];
  const live = new Set(kept.map((r) => r.name));
  const bases = unusedBases(cacheDir, live).filter((b) => !freed.has(b.path));
  const pooledCount = kept.filter((r) => r.state === 'pooled').length;
  const sized = [
    ...sandboxes.slice(0, pooledCount).map((r) => ({
      kind: 'sandbox_cap' as const,
      path: r.path,
      bytes: sandboxBytes(r),
      operation_id: r.operation_id,
      record: r,
    })),
    ...bases.map((b) => ({ kind: 'base_cap' as const, path: b.path, bytes: b.bytes })),
    ...sandboxes.slice(pooledCount).map((r) => ({
      kind: 'sandbox_cap' as const,
      path: r.path,
      bytes: sandboxBytes(r),
      operation_id: r.operation_id,
      record: r,
    })),
    ...idleMirrors
      .sort((a, b) => a.usedAt - b.usedAt)
      .map((m) => ({ kind: 'mirror_cap' as const, path: m.path, bytes: dirBytes(m.path) })),
  ];
  let total =
    kept.reduce((n, r) => n + dirBytes(r.path), 0) +
    bases.reduce((n, b) => n + b.bytes, 0) +
    mirrors(cacheDir)
      .filter((m) => !freed.has(m.path))
      .reduce((n, m) => n + dirBytes(m.path), 0);
  const out: GcItem[] = [];
  for (const item of sized) {
    if (total <= policy.cacheCapBytes) break;
    out.push(item);
    total -= item.bytes;
  }
  return out;
}

async function operationDirItems(stateDir: string, policy: GcPolicy, ports: GcPorts): Promise<GcItem[]> {
  const root = join(stateDir, 'operations');
  if (!existsSync(root)) return [];
  const items: GcItem[] = [];
  const before = policy.now.getTime() - policy.operationRetentionDays * DAY;
  for (const id of readdirSync(root)) {
    const path = join(root, id);
    if (id.startsWith('.') || statSync(path).mtimeMs > before) continue;
    if ((await ports.operationState(id)) === 'finished')
      items.push({ kind: 'operation_dir', path, bytes: dirBytes(path), operation_id: id });
  }
  return items;
}

/** What the policy frees now (nothing removed). */
export async function planGc(
  cacheDir: string,
  stateDir: string | null,
  policy: GcPolicy,
  ports: GcPorts,
): Promise<GcItem[]> {
  const items = await sandboxItems(cacheDir, policy, ports);
  const freed = new Set(items.map((i) => i.path));
  const stillUsed = new Set(
    readRecords(cacheDir)
      .filter((r) => !freed.has(r.path))
      .map((r) => r.mirror),
  );
  for (const m of mirrors(cacheDir)) {
    if (!stillUsed.has(m.path) && m.usedAt <= policy.now.getTime() - policy.mirrorIdleDays * DAY)
      items.push({ kind: 'mirror_idle', path: m.path, bytes: dirBytes(m.path) });
  }
  const live = new Set(
    readRecords(cacheDir)
      .filter((r) => !freed.has(r.path))
      .map((r) => r.name),
  );
  for (const b of unusedBases(cacheDir, live)) {
    if (b.createdAt <= policy.now.getTime() - policy.mirrorIdleDays * DAY)
      items.push({ kind: 'base_idle', path: b.path, bytes: b.bytes });
  }
  items.push(...capItems(cacheDir, policy, new Set(items.map((i) => i.path))));
  if (stateDir) items.push(...(await operationDirItems(stateDir, policy, ports)));
  items.push(...factsItems(cacheDir, policy));
  return items;
}

/** Base-commit facts files written before the mirrors' idle limit (their mtime: they are written once). */
function factsItems(cacheDir: string, policy: GcPolicy): GcItem[] {
  const dir = baseFactsDir(cacheDir);
  const before = policy.now.getTime() - policy.mirrorIdleDays * DAY;
  const items: GcItem[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return items;
  }
  for (const name of names) {
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (st.isFile() && st.mtimeMs <= before) items.push({ kind: 'facts_idle', path, bytes: st.size });
    } catch {
      // gone meanwhile
    }
  }
  return items;
}

/** Apply a plan; then the orphan sweep (worktrees without a record, pruned under the mirror lock). */
export async function applyGc(
  cacheDir: string,
  items: GcItem[],
  now: Date,
  spareCgroupsOf?: (operationId: string) => Promise<boolean>,
): Promise<{ removed: GcItem[]; orphans: string[]; cgroups: string[] }> {
  const removed: GcItem[] = [];
  // A pooled sandbox claimed by a mission since the plan keeps its mirror (its objects come from there).
  const claimedMirrors = new Set<string>();
  for (const item of items) {
    try {
      if (item.record) {
        if (!(await discardSandbox(cacheDir, item.record))) {
          claimedMirrors.add(item.record.mirror);
          continue;
        }
      } else if (claimedMirrors.has(item.path)) continue;
      else if (item.kind === 'base_idle' || item.kind === 'base_cap') {
        const live = new Set(readRecords(cacheDir).map((r) => r.name));
        if (!(await collectBase(cacheDir, basename(item.path), live))) continue;
      } else if (item.kind === 'operation_dir' || item.kind === 'facts_idle') removeOrThrow(item.path);
      else await withFileLock(mirrorLockDir(item.path), async () => removeOrThrow(item.path), 10_000);
      removed.push(item);
    } catch {
      // busy (lock held) or already gone: the next sweep tries again
    }
  }
  const swept = await sweepSandboxes(cacheDir, now);
  // A crashed worker's phase cgroups of this cache (their owner is gone): emptied and removed, but for those spared.
  const cgroups = await sweepStaleCgroups(undefined, spareCgroupsOf, cgroupScope(cacheDir));
  return { removed, orphans: swept.removed, cgroups };
}

/** Remove a tree however deep; a tree left behind is not counted as freed (the next sweep tries again). */
function removeOrThrow(path: string): void {
  if (!removeTree(path)) throw new Error(`${path} could not be removed`);
}

/** Free bytes on the filesystem holding `dir` (statfs), or null when it cannot be read. */
export function freeBytes(dir: string): number | null {
  try {
    const s = statfsSync(existsSync(dir) ? dir : '/');
    return s.bavail * s.bsize;
  } catch {
    return null;
  }
}
