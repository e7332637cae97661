/**
 * Read-only views of the fleet for the API and /metrics: live workers (from the heartbeat keys
 * workers write, `<p>:worker:<id>`), runtime queues and their BullMQ job counts, and the
 * operation history with filters and a cursor.
 */
import type { QueueRecord } from '../../shared/queue/operation-store.js';
import type { QueueClient } from '../queue/queue-client.js';
import { operationOfJob, queueName } from '../../shared/queue/topology.js';

export interface WorkerView {
  id: string;
  /** `runtime` (runs missions from its runtime queues) or `results` (webhooks, batches, promotion). */
  role: 'runtime' | 'results';
  host: string | null;
  pid: number | null;
  runtimes: string[];
  concurrency: number | null;
  running_operations: string[];
  last_heartbeat: string | null;
  /** Free bytes on the worker's cache filesystem and its floor (runtime workers; null when not reported). */
  disk_free_bytes: number | null;
  disk_floor_bytes: number | null;
}

export const JOB_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed'] as const;

async function scanKeys(client: QueueClient, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

function workerView(key: string, raw: string | null): WorkerView | null {
  if (raw === null) return null;
  try {
    const b = JSON.parse(raw) as Record<string, unknown>;
    return {
      id: typeof b.id === 'string' ? b.id : key.slice(key.lastIndexOf(':') + 1),
      role: b.role === 'results' ? 'results' : 'runtime',
      host: typeof b.host === 'string' ? b.host : null,
      pid: typeof b.pid === 'number' ? b.pid : null,
      runtimes: Array.isArray(b.runtimes) ? b.runtimes.map(String) : [],
      concurrency: typeof b.concurrency === 'number' ? b.concurrency : null,
      running_operations: Array.isArray(b.active) ? b.active.map(String) : [],
      last_heartbeat: typeof b.at === 'string' ? b.at : null,
      disk_free_bytes: typeof b.disk_free_bytes === 'number' ? b.disk_free_bytes : null,
      disk_floor_bytes: typeof b.disk_floor_bytes === 'number' ? b.disk_floor_bytes : null,
    };
  } catch {
    return null;
  }
}

export async function listWorkers(client: QueueClient): Promise<WorkerView[]> {
  const keys = await scanKeys(client, client.store.keys.worker('*'));
  if (keys.length === 0) return [];
  const values = await client.redis.mget(...keys);
  return keys
    .map((k, i) => workerView(k, values[i] ?? null))
    .filter((w): w is WorkerView => w !== null)
    .sort((a, b) => a.id.localeCompare(b.id));
}

/** Runtime ids with a BullMQ queue in Redis, plus those live workers serve. */
export async function runtimeIds(client: QueueClient, workers?: WorkerView[]): Promise<string[]> {
  const bull = client.store.keys.bullPrefix;
  const ids = new Set<string>();
  for (const suffix of ['meta', 'id']) {
    for (const key of await scanKeys(client, `${bull}:runtime.*:${suffix}`))
      ids.add(key.slice(`${bull}:runtime.`.length, -(suffix.length + 1)));
  }
  for (const w of workers ?? (await listWorkers(client))) w.runtimes.forEach((r) => ids.add(r));
  return [...ids].sort();
}

/**
 * BullMQ's job counts of a runtime queue, except `active`: only jobs a live worker runs. BullMQ keeps
 * a dead worker's job active until its lock expires (120 s by default); counted here it would look
 * like work in progress while nobody runs it (its operation is `unknown` within seconds).
 */
export async function queueCounts(
  client: QueueClient,
  runtime: string,
): Promise<Record<(typeof JOB_STATES)[number], number>> {
  const queue = await client.queue(runtime);
  const counts = await queue.getJobCounts(...JOB_STATES.map((s) => (s === 'waiting' ? 'wait' : s)));
  const out = Object.fromEntries(JOB_STATES.map((s) => [s, counts[s === 'waiting' ? 'wait' : s] ?? 0])) as Record<
    (typeof JOB_STATES)[number],
    number
  >;
  if (out.active > 0) out.active = await liveActive(client, runtime);
  return out;
}

/** Seconds since the oldest job still waiting on a runtime queue was added (BullMQ pushes on the left, takes from the right). */
export async function oldestWaitingSeconds(client: QueueClient, runtime: string): Promise<number> {
  const { redis, keys } = client.store;
  const base = `${keys.bullPrefix}:${queueName(runtime)}`;
  const [oldest] = await redis.lrange(`${base}:wait`, -1, -1);
  const at = oldest ? Number(await redis.hget(`${base}:${oldest}`, 'timestamp')) : NaN;
  return Number.isFinite(at) ? Math.max(0, (Date.now() - at) / 1000) : 0;
}

/** Active jobs of a runtime queue whose operation is claimed by a worker with a live heartbeat (or not claimed yet). */
async function liveActive(client: QueueClient, runtime: string): Promise<number> {
  const { redis, keys } = client.store;
  const jobIds = await redis.lrange(`${keys.bullPrefix}:${queueName(runtime)}:active`, 0, -1);
  let live = 0;
  for (const jobId of jobIds) {
    const id = operationOfJob(jobId);
    const [state, worker] = id ? await redis.hmget(keys.op(id), 'state', 'worker') : [null, null];
    if (state === 'queued') live += 1;
    else if (state === 'running' || state === 'verifying') {
      const owner = workerIdOf(worker);
      if (owner && (await redis.exists(keys.worker(owner))) === 1) live += 1;
    }
  }
  return live;
}

function workerIdOf(raw: string | null | undefined): string | null {
  try {
    const id = (JSON.parse(raw ?? 'null') as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

export interface OperationFilter {
  state?: string | undefined;
  runtime?: string | undefined;
  verdict?: string | undefined;
  /** `key` (present) or `key=value`. */
  label?: string | undefined;
  limit: number;
  cursor?: string | undefined;
  /** Only this tenant's operations (a tenant's token); unset: every tenant's (admin). */
  tenant?: string | undefined;
}

function matches(record: QueueRecord, f: OperationFilter): boolean {
  if (f.tenant !== undefined && record.tenant !== f.tenant) return false;
  if (f.state && record.state !== f.state) return false;
  if (f.runtime && record.runtime !== f.runtime) return false;
  if (f.verdict && record.verdict !== f.verdict) return false;
  if (f.label) {
    const labels = ((record.job.mission as { labels?: Record<string, string> } | null)?.labels ?? {}) as Record<
      string,
      string
    >;
    const eq = f.label.indexOf('=');
    const key = eq < 0 ? f.label : f.label.slice(0, eq);
    if (!(key in labels) || (eq >= 0 && labels[key] !== f.label.slice(eq + 1))) return false;
  }
  return true;
}

/** Cursor `<score>:<id>`: the last operation of the previous page (newest first). */
export function parseCursor(cursor: string | undefined): { score: number; id: string } | null {
  if (!cursor) return null;
  const m = /^(\d{1,16}):([A-Za-z0-9._-]{1,200})$/.exec(cursor);
  return m ? { score: Number(m[1]), id: m[2] as string } : null;
}

const SCAN_BUDGET = 5000;

/** One page of operations newest first; `next_cursor` null at the end. */
export async function listOperations(
  client: QueueClient,
  f: OperationFilter,
): Promise<{ operations: QueueRecord[]; next_cursor: string | null }> {
  const { redis, keys } = client.store;
  // Members of one score come in reverse id order, so ids >= pos.id at pos.score were seen.
  let pos = parseCursor(f.cursor);
  const out: QueueRecord[] = [];
  for (let scanned = 0; ;) {
    const flat = await redis.zrevrangebyscore(
      keys.index,
      pos ? String(pos.score) : '+inf',
      '-inf',
      'WITHSCORES',
      'LIMIT',
      0,
      200,
    );
    const page: Array<[string, number]> = [];
    for (let i = 0; i < flat.length; i += 2) page.push([flat[i] as string, Number(flat[i + 1])]);
    const fresh = page.filter(([id, score]) => !(pos && score === pos.score && id >= pos.id));
    if (fresh.length === 0) return { operations: out, next_cursor: null };
    // getMany: a settled record is compact (its long fields beside it), one pipeline either way.
    const records = await client.store.getMany(fresh.map(([id]) => id)).catch(() => fresh.map(() => null));
    for (let i = 0; i < fresh.length; i++) {
      const [id, score] = fresh[i] as [string, number];
      pos = { score, id };
      scanned += 1;
      const record = records[i];
      if (record && matches(record, f)) out.push(record);
      if (out.length >= f.limit || scanned >= SCAN_BUDGET) return { operations: out, next_cursor: `${score}:${id}` };
    }
    if (page.length < 200) return { operations: out, next_cursor: null };
  }
}
