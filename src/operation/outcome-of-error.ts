import type { Outcome } from '../shared/contracts/runtime-result.js';
import { errorMessage, UhError } from '../shared/errors.js';

/**
 * The outcome of an operation that a thrown error ended (preparation on the worker, a pipeline
 * phase): `cancelled` when the operation's signal was aborted first, else `failed` with the
 * error's kind as the raw value and its hint.
 */
export function outcomeOfError(error: unknown, signal?: AbortSignal): Outcome {
  if (signal?.aborted) {
    const reason = signal.reason as { message?: string } | undefined;
    return { status: 'cancelled', raw: 'cancel', message: reason?.message ?? 'cancelled', timed_out: false };
  }
  return {
    status: 'failed',
    raw: UhError.isInstance(error) ? `uh:${error.kind}` : 'internal',
    message: errorMessage(error),
    timed_out: false,
    ...(UhError.isInstance(error) && error.hint ? { hint: error.hint } : {}),
  };
}
