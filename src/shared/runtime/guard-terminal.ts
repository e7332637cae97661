import { errorMessage } from '../errors.js';
import type { RuntimeEventV1 } from './v1/runtime-event.js';

/**
 * Wrap an adapter's event stream so it ends with exactly one `runtime.finished` and nothing
 * after it: a thrown error or a stream that ends early becomes a `failed` terminal event,
 * and events after the terminal one are dropped (reported once as a log).
 */
export async function* guardTerminal(events: AsyncIterable<RuntimeEventV1>): AsyncGenerator<RuntimeEventV1> {
  let finished = false;
  const iterator = events[Symbol.asyncIterator]();
  try {
    while (true) {
      let next: IteratorResult<RuntimeEventV1>;
      try {
        next = await iterator.next();
      } catch (error) {
        if (!finished) {
          finished = true;
          yield failure('adapter_error', `runtime adapter failed: ${errorMessage(error)}`);
        }
        return;
      }
      if (next.done) break;
      if (finished) {
        continue; // nothing after the terminal outcome
      }
      if (next.value.type === 'runtime.finished') finished = true;
      yield next.value;
    }
    if (!finished) {
      finished = true;
      yield failure('no_terminal_event', 'runtime ended without a terminal outcome');
    }
  } finally {
    await iterator.return?.();
  }
}

function failure(raw: string, message: string): RuntimeEventV1 {
  return {
    type: 'runtime.finished',
    data: {
      outcome: { status: 'failed', raw, message, timed_out: false },
      final_message: '',
      final_message_source: 'none',
    },
  };
}
