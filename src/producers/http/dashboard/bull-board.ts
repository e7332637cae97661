/**
 * bull-board at `/admin/queues`, read-only, behind the same token as the API (bearer or the
 * dashboard cookie). A job never fails for a mission's outcome (process-operation-job.ts: BullMQ
 * must not retry it), so BullMQ files every settled mission under "completed". The board's
 * name formatter puts the verdict in front of each job's name ("FAILED · op-1", "CANCELLED ·
 * op-2", "VERIFIED · op-3", "VERIFICATION_FAILED · op-4") from the job's return value, so a failed or cancelled mission never
 * reads as a plain completion. A job's data (its mission) is shown with every secret-looking value
 * masked. Queues are re-read (new runtimes) at most every 5 s.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import type { QueueClient } from '../../queue/queue-client.js';
import { runtimeIds } from '../fleet.js';
import { maskSecretFields } from '../../../shared/secret-env.js';

export const BOARD_PATH = '/admin/queues';
const REFRESH_MS = 5000;

interface JobSummary {
  operation_id?: string;
  outcome?: string;
  status?: string | null;
  verdict?: string | null;
}

/** The label shown for a job: its outcome as our receipts say it, then the operation id. */
export function boardJobName(job: {
  name?: string;
  returnvalue?: unknown;
  finishedOn?: number | null;
  failedReason?: string;
}): string {
  const name = job.name ?? '';
  const r = (job.returnvalue ?? null) as JobSummary | null;
  if (!r || typeof r !== 'object') return job.failedReason ? `ERROR · ${name}` : name;
  const status = r.status ?? null;
  const word =
    r.outcome === 'finished'
      ? status === 'completed'
        ? (r.verdict ?? 'completed')
        : (status ?? 'finished')
      : (r.outcome ?? 'done');
  return `${word.toUpperCase()} · ${r.operation_id ?? name}`;
}

export async function mountBullBoard(app: FastifyInstance, client: QueueClient): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BOARD_PATH);
  const adapters = async () =>
    Promise.all(
      (await runtimeIds(client)).map(async (runtime) => {
        const adapter = new BullMQAdapter(await client.queue(runtime), {
          readOnlyMode: true,
          displayName: `runtime ${runtime}`,
        });
        adapter.setFormatter('name', boardJobName);
        // A job's data is its mission: secret-looking values masked (refs shown by name).
        adapter.setFormatter('data', (data) => maskSecretFields(data) as typeof data);
        return adapter;
      }),
    );
  const board = createBullBoard({
    queues: await adapters(),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'uh queues' } },
  });
  let refreshed = Date.now();
  app.addHook('onRequest', async (req) => {
    if (!req.url.startsWith(BOARD_PATH) || Date.now() - refreshed < REFRESH_MS) return;
    refreshed = Date.now();
    board.replaceQueues(await adapters());
  });
  // The board's page asks Google Fonts for its typeface; the dashboard loads with no network, so drop it (system fonts).
  app.addHook('onSend', async (req, reply, payload) => {
    if (
      !req.url.startsWith(BOARD_PATH) ||
      typeof payload !== 'string' ||
      !String(reply.getHeader('content-type') ?? '').startsWith('text/html')
    )
      return payload;
    return payload.replace(/<link[^>]*fonts\.(?:googleapis|gstatic)\.com[^>]*>/g, '');
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: BOARD_PATH });
}
