/**
 * `GET /metrics`: Prometheus text via prom-client. Gauges are read from Redis at scrape time;
 * the settled counter and phase histograms advance by reading the outbox (one entry per
 * settled operation) from where the last scrape stopped, with each entry's receipt timings.
 * Names: docs/observability.md.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { QueueClient } from '../queue/queue-client.js';
import { JOB_STATES, listWorkers, oldestWaitingSeconds, queueCounts, runtimeIds, type WorkerView } from './fleet.js';
import { outboxLag, RECENT_OPERATIONS, stateTally } from './fleet-report.js';

const BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

export class ApiMetrics {
  readonly registry = new Registry();
  private outboxCursor = '-';
  private readonly jobs = new Gauge({
    name: 'uh_queue_jobs',
    help: 'BullMQ jobs per runtime queue and state',
    labelNames: ['runtime', 'state'],
    registers: [this.registry],
  });
  private readonly settled = new Counter({
    name: 'uh_operations_settled_total',
    help: 'Operations settled (outbox entries), by runtime, state, status and verdict',
    labelNames: ['runtime', 'state', 'status', 'verdict'],
    registers: [this.registry],
  });
  private readonly phases = new Histogram({
    name: 'uh_phase_duration_seconds',
    help: "Phase durations from receipts' timings_ms, by runtime and phase",
    labelNames: ['runtime', 'phase'],
    buckets: BUCKETS,
    registers: [this.registry],
  });
  private readonly workers = new Gauge({
    name: 'uh_workers_live',
    help: 'Workers with a live heartbeat: role="runtime" per runtime served, role="results" (outbox consumers)',
    labelNames: ['role', 'runtime'],
    registers: [this.registry],
  });
  private readonly states = new Gauge({
    name: 'uh_operations',
    help: `Operations by state among the newest ${RECENT_OPERATIONS}`,
    labelNames: ['state'],
    registers: [this.registry],
  });
  private readonly unknown = new Gauge({
    name: 'uh_operations_unknown',
    help: `Operations in state unknown among the newest ${RECENT_OPERATIONS}: they need an operator`,
    registers: [this.registry],
  });
  private readonly outboxLag = new Gauge({
    name: 'uh_outbox_lag',
    help: 'Outbox entries not yet delivered by the results consumer group (lag + pending)',
    registers: [this.registry],
  });
  private readonly oldestWaiting = new Gauge({
    name: 'uh_queue_oldest_waiting_seconds',
    help: 'Age of the oldest job waiting on a runtime queue (0 when none waits)',
    labelNames: ['runtime'],
    registers: [this.registry],
  });
  private readonly webhookDead = new Gauge({
    name: 'uh_webhook_dead_letters',
    help: 'Completions whose webhook failed every attempt (the outbox:dead stream; grows by one per failure)',
    registers: [this.registry],
  });
  private readonly diskFree = new Gauge({
    name: 'uh_worker_disk_free_bytes',
    help: "Free bytes on a runtime worker's cache filesystem, from its heartbeat",
    labelNames: ['worker', 'host'],
    registers: [this.registry],
  });
  private readonly diskFloor = new Gauge({
    name: 'uh_worker_disk_floor_bytes',
    help: 'The free-space floor below which a runtime worker stops claiming jobs (UH_MIN_FREE_BYTES)',
    labelNames: ['worker', 'host'],
    registers: [this.registry],
  });
  readonly sseClients = new Gauge({
    name: 'uh_api_sse_clients',
    help: 'Open event streams on this API process',
    registers: [this.registry],
  });

  constructor(private readonly client: QueueClient) {
    // process_* and nodejs_* of the process serving /metrics (the API, or a worker's --metrics-port).
    collectDefaultMetrics({ register: this.registry });
  }

  async render(): Promise<string> {
    await Promise.all([this.readFleet(), this.readOutbox(), this.readStates(), this.readOutboxLag()]);
    return this.registry.metrics();
  }

  private async readFleet(): Promise<void> {
    const workers = await listWorkers(this.client);
    const runtimes = await runtimeIds(this.client, workers);
    this.workers.reset();
    this.jobs.reset();
    this.oldestWaiting.reset();
    this.readDisks(workers);
    // Always present, 0 when none: the dead-results-worker alert needs a series to compare.
    this.workers.set({ role: 'results' }, workers.filter((w) => w.role === 'results').length);
    for (const runtime of runtimes) {
      const serving = workers.filter((w) => w.role === 'runtime' && w.runtimes.includes(runtime));
      this.workers.set({ role: 'runtime', runtime }, serving.length);
      const counts = await queueCounts(this.client, runtime);
      for (const state of JOB_STATES) this.jobs.set({ runtime, state }, counts[state]);
      this.oldestWaiting.set({ runtime }, await oldestWaitingSeconds(this.client, runtime));
    }
    this.webhookDead.set(await this.client.store.redis.xlen(this.client.store.keys.outboxDead));
  }

  private readDisks(workers: WorkerView[]): void {
    this.diskFree.reset();
    this.diskFloor.reset();
    for (const w of workers) {
      const labels = { worker: w.id, host: w.host ?? '' };
      if (w.disk_free_bytes !== null) this.diskFree.set(labels, w.disk_free_bytes);
      if (w.disk_floor_bytes !== null) this.diskFloor.set(labels, w.disk_floor_bytes);
    }
  }

  private async readOutbox(): Promise<void> {
    const { store } = this.client;
    const { redis, keys } = store;
    for (;;) {
      const entries = await redis.xrange(keys.outbox, this.outboxCursor, '+', 'COUNT', 500);
      if (entries.length === 0) return;
      const completions = entries.map(([, fields]) => parseCompletion(fields));
      const pipe = redis.pipeline();
      for (const c of completions) pipe.hget(keys.op(c?.operation_id ?? ''), 'runtime_started');
      const [replies, receipts] = await Promise.all([
        pipe.exec().then((r) => r ?? []),
        // Receipts are in the artifact store (verified by digest there); a missing one counts as none.
        Promise.all(completions.map((c) => (c ? store.artifact(c.operation_id, 'receipt').catch(() => null) : null))),
      ]);
      completions.forEach((c, i) => {
        // Cancelled before its runtime started (cancelled while queued): its "total" is time spent waiting, not a run.
        const ran = !(c?.status === 'cancelled' && replies[i]?.[1] !== '1');
        if (c) this.count(c, ran ? receipts[i] : null);
      });
      this.outboxCursor = `(${entries[entries.length - 1]?.[0]}`;
      if (entries.length < 500) return;
    }
  }

  private count(c: Completion, receipt: unknown): void {
    this.settled.inc({ runtime: c.runtime, state: c.state, status: c.status ?? 'none', verdict: c.verdict ?? 'none' });
    if (typeof receipt !== 'string') return;
    try {
      const timings = (JSON.parse(receipt) as { timings_ms?: Record<string, unknown> }).timings_ms ?? {};
      for (const [phase, ms] of Object.entries(timings))
        if (typeof ms === 'number')
          this.phases.observe({ runtime: c.runtime, phase: phase.replace(/_ms$/, '') }, ms / 1000);
    } catch {
      /* a receipt that does not parse has no timings to count */
    }
  }

  private async readStates(): Promise<void> {
    const tally = await stateTally(this.client);
    for (const [state, n] of tally) this.states.set({ state }, n);
    this.unknown.set(tally.get('unknown') ?? 0);
  }

  private async readOutboxLag(): Promise<void> {
    this.outboxLag.set(await outboxLag(this.client));
  }
}

interface Completion {
  operation_id: string;
  runtime: string;
  state: string;
  status: string | null;
  verdict: string | null;
}

function parseCompletion(fields: string[]): Completion | null {
  const i = fields.indexOf('completion');
  try {
    const c = JSON.parse(fields[i + 1] ?? 'null') as Partial<Completion> | null;
    if (!c || typeof c.operation_id !== 'string' || typeof c.runtime !== 'string') return null;
    return {
      operation_id: c.operation_id,
      runtime: c.runtime,
      state: String(c.state ?? 'unknown'),
      status: c.status ?? null,
      verdict: c.verdict ?? null,
    };
  } catch {
    return null;
  }
}
