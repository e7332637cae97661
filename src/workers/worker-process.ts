/**
 * One worker process: the runtime pool (a BullMQ worker per runtime queue) and, when asked, the
 * results worker (completion consumer, batch queue, dead-owner watch). `uh worker start` parses
 * its flags, calls `startWorkerProcess` and turns signals into `shutdown` / `cancelAll`.
 */
import type { GcConfig, UhConfig } from '../shared/config.js';
import type { OperationSettings } from '../operation/settings.js';

export type WorkerEvent = (event: string, data: Record<string, unknown>) => void;

export interface WorkerProcessOptions {
  settings: OperationSettings;
  queue: UhConfig['queue'];
  redisUrl: string;
  /** Runtime queues this process serves; none: a results worker only. */
  runtimes: string[];
  concurrency: number;
  globalConcurrency?: number;
  gc: GcConfig;
  /** Run the results worker here, under this consumer name (null: its host name). */
  results: { consumer: string | null } | false;
  onEvent: WorkerEvent;
}

export interface WorkerProcess {
  /** The runtime pool's worker id; null when this process serves no runtime. */
  workerId: string | null;
  active(): string[];
  /** Drain: stop taking jobs, let running missions finish for `graceMs`, then cancel them. */
  shutdown(signal: string, graceMs: number): Promise<void>;
  /** Cancel every running mission at once (a second signal). */
  cancelAll(reason: string): void;
}

export async function startWorkerProcess(o: WorkerProcessOptions): Promise<WorkerProcess> {
  const stop = new AbortController();
  const tasks: Promise<void>[] = [];
  let pool: Awaited<ReturnType<typeof import('./pools/runtime-pool.js').startRuntimePool>> | null = null;
  if (o.runtimes.length > 0) {
    const { startRuntimePool } = await import('./pools/runtime-pool.js');
    pool = await startRuntimePool({
      settings: o.settings,
      redisUrl: o.redisUrl,
      config: o.queue,
      runtimes: o.runtimes,
      concurrency: o.concurrency,
      ...(o.globalConcurrency ? { globalConcurrency: o.globalConcurrency } : {}),
      gc: o.gc,
    });
  }
  if (o.results) {
    const { startResultsWorker } = await import('./results/results-worker.js');
    const { consumer } = o.results;
    const results = await startResultsWorker({
      settings: o.settings,
      queue: o.queue,
      redisUrl: o.redisUrl,
      ...(consumer ? { consumer } : {}),
      signal: stop.signal,
      onEvent: o.onEvent,
    });
    tasks.push(results.done);
  }
  return {
    workerId: pool?.workerId ?? null,
    active: () => pool?.active() ?? [],
    cancelAll: (reason) => pool?.cancelAll(reason),
    shutdown: async (signal, graceMs) => {
      stop.abort();
      await Promise.allSettled([pool?.shutdown(signal, graceMs), ...tasks]);
    },
  };
}
