import type { UhEvent } from '../../shared/contracts/event.js';
import type { OperationStore } from '../../shared/queue/operation-store.js';

/**
 * The live publisher of one operation's events to its Redis stream, in order, with at most one
 * write in flight: events appended while a write is on its way go out together in the next one
 * (one pipelined round trip instead of one XADD each). Nothing waits on a timer, so an event
 * reaches the stream as soon as the previous write returns. Every event is on disk
 * (`events.jsonl`, written synchronously by the event log) before it is handed here, so a
 * failed write or a crash loses nothing already written locally; a failed write is dropped from
 * the stream only (as before: publishing never fails the operation).
 */
export interface EventPublisher {
  /** The event log's listener: queue the event; never throws, never blocks the pipeline. */
  publish: (event: UhEvent) => void;
  /** Resolves once every event published so far is in the stream (or its write failed). */
  flush: () => Promise<void>;
}

export function eventPublisher(store: OperationStore, operationId: string): EventPublisher {
  let buffered: Array<readonly [string, string]> = [];
  let inFlight: Promise<void> | null = null;
  const drain = async (): Promise<void> => {
    while (buffered.length > 0) {
      const batch = buffered;
      buffered = [];
      await store.appendEvents(batch).catch(() => undefined);
    }
    inFlight = null;
  };
  return {
    publish(event) {
      buffered.push([operationId, JSON.stringify(event)]);
      inFlight ??= drain();
    },
    async flush() {
      while (inFlight) await inFlight;
    },
  };
}
