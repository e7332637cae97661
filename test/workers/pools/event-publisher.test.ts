/**
 * The queue worker's live event publisher against a real Redis: what a `uh mission watch` (or the
 * API's event stream) sees is every event, in order, each once, however fast the pipeline
 * appends; events appended while a write is in flight share the next round trip.
 */
import { describe, expect, it } from 'vitest';
import type { UhEvent } from '../../../src/shared/contracts/event.js';
import { eventPublisher } from '../../../src/workers/pools/event-publisher.js';
import { useOperationStore } from '../../support/operation-store.js';

const fx = useOperationStore('publisher', 'p');

const event = (operationId: string, seq: number): UhEvent => ({
  seq,
  at: new Date(0).toISOString(),
  operation_id: operationId,
  type: 'runtime.message',
  data: { text: `m${seq}` },
});

async function streamSeqs(operationId: string): Promise<number[]> {
  const entries = await fx.store.redis.xrange(fx.store.keys.events(operationId), '-', '+');
  return entries.map(([, fields]) => (JSON.parse(fields[1] as string) as UhEvent).seq);
}

describe('event publisher', () => {
  it('publishes a burst of 500 events in order, none lost, none twice, in far fewer round trips than events', async () => {
    const id = 'burst';
    const publisher = eventPublisher(fx.store, id);
    let writes = 0;
    const append = fx.store.appendEvents.bind(fx.store);
    fx.store.appendEvents = async (entries) => {
      writes++;
      return append(entries);
    };
    try {
      for (let seq = 0; seq < 500; seq++) {
        publisher.publish(event(id, seq));
        if (seq % 50 === 0) await new Promise((r) => setImmediate(r)); // the pipeline yields between phases
      }
      await publisher.flush();
    } finally {
      fx.store.appendEvents = append;
    }
    expect(await streamSeqs(id)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(writes).toBeLessThan(50);
  });

  it('flush waits for events published while a write is in flight', async () => {
    const id = 'late';
    const publisher = eventPublisher(fx.store, id);
    publisher.publish(event(id, 0));
    const flushing = publisher.flush();
    publisher.publish(event(id, 1));
    await flushing;
    await publisher.flush();
    expect(await streamSeqs(id)).toEqual([0, 1]);
  });
});
