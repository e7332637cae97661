/** Helpers for the real ACP agent tests. */
import type { RuntimeEventV1 } from '../../src/shared/runtime/v1/index.js';

/**
 * Cancel the run once the agent's prompt reached the scripted model (the model then hangs), so the
 * agent really has a turn in flight when `session/cancel` goes out. Polls with a deadline.
 */
export function cancelOnceModelCalled(requests: () => Promise<unknown[]>, deadlineMs = 60_000) {
  const controller = new AbortController();
  let polling = false;
  return {
    signal: controller.signal,
    onEvent: (event: RuntimeEventV1) => {
      if (polling || event.type !== 'runtime.started') return;
      polling = true;
      void (async () => {
        const deadline = Date.now() + deadlineMs;
        while (Date.now() < deadline && (await requests()).length === 0) await new Promise((r) => setTimeout(r, 50));
        controller.abort({ kind: 'cancel', message: 'cancelled by test' });
      })();
    },
  };
}
