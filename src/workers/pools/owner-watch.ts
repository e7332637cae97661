/**
 * Dead owners noticed in seconds. Every live runtime worker (and the results worker) runs this
 * watch: every heartbeat interval it reads the running index (`<p>:running`, every claimed
 * operation whatever its runtime, manifest runtimes included), and an operation that is
 * `running`/`verifying` while its owner's heartbeat key has expired (3 heartbeats, 6 s by
 * default) is orphaned once it is still missing an interval later. The dead worker's agent
 * process groups alive on this host are killed first (an unisolated agent has no bwrap
 * `--die-with-parent`); groups on another host are named in the unknown reason as not killed.
 * A started runtime → `unknown` with an
 * `operation.unknown` event (never run again), a runtime that never started → `queued` (BullMQ's
 * stalled checker re-delivers it). So `uh mission status` says `unknown` within heartbeat×4 of the
 * owner's death, without an operator command. BullMQ's lock + stalled checker stay the second line.
 *
 * A runtime with authoritative recovery (codex-app-server) is then settled from its own records,
 * as `uh mission recover` does; the others stay `unknown` for an operator to settle. A worker
 * whose claim of a re-delivered job made the operation unknown (the stalled checker was first)
 * does the same through `settleFromRuntime`.
 */
import { hostname } from 'node:os';
import { basename } from 'node:path';
import type { Redis } from 'ioredis';
import { completionOf, type OperationStore, type QueueRecord } from '../../shared/queue/operation-store.js';
import { operationOfJob, queueName } from '../../shared/queue/topology.js';
import { recoverQueuedRuntime } from '../../operation/recover-runtime.js';
import { receiptFromRecovery } from '../../operation/synthesize-receipt.js';
import { finishOperation } from '../../operation/finish-operation.js';
import type { OperationSettings } from '../../operation/settings.js';
import { RUNTIME_CATALOG } from '../operation-ports.js';
import { endOrphanedGroups } from '../../shared/process/leftover-groups.js';
import { endOrphanedCgroups } from '../../shared/process/mission-cgroup.js';

export interface OwnerWatchOptions {
  redis: Redis;
  store: OperationStore;
  /** Runtime ids whose queues are watched besides every registered runtime's (a worker's manifest runtimes). */
  runtimes?: string[];
  intervalMs: number;
  /** The host's settings: state dir, logger, the receipt key a settled operation is signed with. */
  settings: Pick<OperationSettings, 'stateDir' | 'logger' | 'receiptKey'>;
  /** Called for each operation this watch moved (tests, worker output). */
  onOrphan?: (operationId: string, state: string) => void;
  /**
   * Owners seen without a heartbeat, and since when. An owner is declared dead only when its key
   * is still missing a full heartbeat interval after it was first missed: a live worker whose key
   * lapsed while Redis failed over (a Cluster master killed) beats again within that interval.
   */
  suspects?: Map<string, number>;
}

/**
 * One pass: the operations moved (id → new state). Scanned: the running index (every claimed
 * operation, whatever its runtime) and, for operations claimed before the index existed, the
 * active lists of the known runtime queues. Ids in the index no longer running are pruned.
 */
export async function watchOwnersOnce(options: OwnerWatchOptions): Promise<Map<string, string>> {
  const { redis, store } = options;
  const moved = new Map<string, string>();
  const ids = new Set(await store.runningIds());
  const indexed = new Set(ids);
  const runtimes = [...new Set([...RUNTIME_CATALOG.ids, ...(options.runtimes ?? [])])];
  for (const runtime of runtimes) {
    const jobIds = await redis.lrange(`${store.keys.bullPrefix}:${queueName(runtime)}:active`, 0, -1);
    for (const jobId of jobIds) {
      const id = operationOfJob(jobId);
      if (id) ids.add(id);
    }
  }
  for (const id of ids) {
    const state = await orphanIfOwnerDead(options, id, indexed.has(id));
    if (state) moved.set(id, state);
  }
  return moved;
}

/** The rule for a live owner, one for every caller: its worker's heartbeat key is present. */
export async function ownerAlive(redis: Redis, store: OperationStore, record: QueueRecord): Promise<boolean> {
  return (
    record.worker !== null &&
    record.worker !== undefined &&
    (await redis.exists(store.keys.worker(record.worker.id))) === 1
  );
}

/** The operation's cgroups of a dead owner on this host, emptied: how the reason says so, or nothing. */
async function killedCgroups(id: string): Promise<string[]> {
  const ended = new Map<string, number>();
  for (const { dir, killed } of await endOrphanedCgroups(id)) {
    const leaf = basename(dir);
    ended.set(leaf, Math.max(ended.get(leaf) ?? 0, killed));
  }
  const processes = [...ended.values()].reduce((n, k) => n + k, 0);
  if (ended.size === 0 || processes === 0) return [];
  return [`agent cgroup(s) ${[...ended.keys()].join(', ')} killed on ${hostname()} (${processes} process(es))`];
}

async function orphanIfOwnerDead(options: OwnerWatchOptions, id: string, indexed: boolean): Promise<string | null> {
  const { redis, store } = options;
  const { logger } = options.settings;
  const record = await store.get(id);
  if (!record || (record.state !== 'running' && record.state !== 'verifying') || !record.worker || !record.owner) {
    if (indexed) await store.pruneRunning(id);
    return null;
  }
  const suspects = options.suspects;
  if (await ownerAlive(redis, store, record)) {
    suspects?.delete(record.worker.id);
    return null;
  }
  if (suspects) {
    const since = suspects.get(record.worker.id);
    if (since === undefined) suspects.set(record.worker.id, Date.now());
    // The next tick, not a full interval to the millisecond: timer jitter would cost a whole extra interval.
    if (since === undefined || Date.now() - since < options.intervalMs * 0.75) return null;
  }
  // The dead worker's agent (unisolated: nothing else ends it) is killed before the record says so:
  // its phase cgroups on this host first (everything it started, whatever its group), then its groups.
  const agent = endOrphanedGroups(record.journal, await killedCgroups(id));
  const reason = `owner worker ${record.worker.id} is gone (heartbeat expired); ${agent}`;
  const to = await store.orphaned(id, reason, completionOf(record), record.owner);
  if (!to) return null;
  logger.warn({ operation_id: id, worker: record.worker.id, state: to, agent }, 'dead owner: operation orphaned');
  options.onOrphan?.(id, to);
  if (to === 'unknown') return (await settleFromRuntime(options, id)) ?? to;
  return to;
}

/**
 * codex-app-server and other runtimes with `recover()`: settle an unknown operation from the
 * run's own records. Whoever made it unknown calls this: the owner watch (a dead owner) and a
 * worker whose claim of a re-delivered job found its runtime started (the stalled checker came
 * first). 'finished' when settled; null when it stays unknown for an operator.
 */
export async function settleFromRuntime(
  options: Pick<OwnerWatchOptions, 'store' | 'settings'>,
  id: string,
): Promise<string | null> {
  const { store, settings } = options;
  const record = (await store.get(id)) as QueueRecord;
  const adapter = await RUNTIME_CATALOG.load(record.runtime);
  if (!adapter?.recover) return null;
  try {
    const got = await recoverQueuedRuntime(record, settings.stateDir, RUNTIME_CATALOG);
    if (!got || got.recovery.state !== 'settled' || !got.recovery.finished) return null;
    const target = { kind: 'queue', store, record, owner: null, allowedStates: ['unknown'] } as const;
    const ended = await finishOperation(target, {
      receipt: receiptFromRecovery(record, got.recovery.finished),
      keySource: settings.receiptKey,
      event: { recovered: true },
    });
    return ended.settled ? 'finished' : null;
  } catch (error) {
    settings.logger.warn(
      { operation_id: id, err: (error as Error).message },
      'runtime recovery of a dead owner failed: left unknown',
    );
    return null;
  }
}

/** Run the watch every interval until the returned stop function is called. */
export function startOwnerWatch(watch: OwnerWatchOptions): () => void {
  const options = { ...watch, suspects: watch.suspects ?? new Map<string, number>() };
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try {
      await watchOwnersOnce(options);
    } catch (error) {
      options.settings.logger.warn({ err: (error as Error).message }, 'owner watch failed; retrying next interval');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), options.intervalMs);
  timer.unref();
  void tick();
  return () => clearInterval(timer);
}
