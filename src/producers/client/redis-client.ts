/** The client over Redis: the same producer code as the CLI (submit, tail, cancel, materialize). */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostSettingsOf, loadConfig } from '../../shared/config.js';
import { EXIT } from '../../shared/contracts/exit-codes.js';
import type { UhEvent } from '../../shared/contracts/event.js';
import { parseMission } from '../../shared/contracts/load-mission.js';
import { UhError } from '../../shared/errors.js';
import { tailOperation } from '../../shared/queue/event-stream.js';
import type { QueueRecord } from '../../shared/queue/operation-store.js';
import { cancelOperation } from '../queue/cancel-operation.js';
import { materialize, readReceiptFromStore } from '../queue/materialize.js';
import { QueueClient } from '../queue/queue-client.js';
import { submitOperation } from '../submit.js';
import type { OperationView, Settled, UhClient, WaitOptions } from './client-types.js';

const view = (r: QueueRecord): OperationView => ({
  operationId: r.operation_id,
  state: r.state,
  status: r.status,
  verdict: r.verdict,
  exitCode: r.exit_code,
  runtime: r.runtime,
});

export async function redisClient(options: {
  redisUrl: string;
  prefix?: string;
  stateDir?: string;
  cacheDir?: string;
}): Promise<UhClient> {
  const config = loadConfig(); // the same UH_* settings as the CLI; options win
  const client = await QueueClient.open(
    options.prefix ? { ...config.queue, prefix: options.prefix } : config.queue,
    options.redisUrl,
  );
  const stateDir = options.stateDir ?? join(tmpdir(), 'uh-client');
  const cacheDir = options.cacheDir ?? config.core.cacheDir;
  const record = async (id: string): Promise<QueueRecord> => {
    const r = await client.store.get(id);
    if (!r)
      throw new UhError('not_found', `no operation ${id} in Redis (prefix ${client.config.prefix})`, {
        hint: 'check the id and the prefix',
      });
    return r;
  };
  const wait = async (id: string, o: WaitOptions = {}): Promise<Settled> => {
    await record(id);
    const settled = await tailOperation(client.store, id, {
      from: 'start',
      ...(o.onEvent ? { onEvent: o.onEvent } : {}),
      ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
    });
    if (!settled) return { operationId: id, state: 'wait_timed_out', receipt: null, exitCode: EXIT.unknown };
    if (settled.state === 'unknown')
      return { operationId: id, state: 'unknown', receipt: null, exitCode: EXIT.unknown };
    const receipt = await readReceiptFromStore(client.store, id);
    return {
      operationId: id,
      state: 'finished',
      receipt,
      exitCode: receipt?.exit_code ?? settled.exit_code ?? EXIT.failed,
    };
  };
  return {
    async submit(mission, o = {}) {
      const parsed = parseMission(mission, process.cwd());
      const host = { host: hostSettingsOf(config), tenant: config.core.tenant };
      const got = await submitOperation(client, parsed, { stateDir, cacheDir, ...host, ...(o.runtime ? o : {}) });
      return { operationId: parsed.operation_id, attached: got.kind === 'attached', state: got.record.state };
    },
    attach: async (id) => view(await record(id)),
    wait,
    async *watch(id, o = {}) {
      const queue: UhEvent[] = [];
      let wake: (() => void) | null = null;
      let done = false;
      void wait(id, { onEvent: (e) => (queue.push(e), wake?.()), ...(o.signal ? { signal: o.signal } : {}) }).finally(
        () => ((done = true), wake?.()),
      );
      for (;;) {
        while (queue.length > 0) yield queue.shift() as UhEvent;
        if (done) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
      }
    },
    cancel: async (id, reason = 'cancelled by a client') =>
      cancelOperation(client, await record(id), reason, config.receipts),
    async collect(id, dir) {
      const r = await record(id);
      if (r.state !== 'finished')
        throw new UhError('not_found', `operation ${id} has no receipt yet (state ${r.state})`, {
          hint: 'wait for it first',
        });
      return materialize(client.store, id, dir);
    },
    close: () => client.close(),
  };
}
