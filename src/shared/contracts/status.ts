import { z } from 'zod';

export const RuntimeStatusSchema = z.enum(['completed', 'failed', 'blocked', 'cancelled']);
export type RuntimeStatus = z.infer<typeof RuntimeStatusSchema>;

export const VerdictSchema = z.enum(['verified', 'verification_failed', 'scope_violation', 'unverified']);
export type Verdict = z.infer<typeof VerdictSchema>;

export const OperationStateSchema = z.enum(['queued', 'running', 'verifying', 'finished', 'unknown']);
export type OperationState = z.infer<typeof OperationStateSchema>;

export { EXIT } from './exit-codes.js';
import { EXIT } from './exit-codes.js';

/** The exit code a finished operation maps to: status first, then verdict. */
export function exitCodeFor(status: RuntimeStatus, verdict: Verdict): number {
  switch (status) {
    case 'blocked':
      return EXIT.blocked;
    case 'cancelled':
      return EXIT.cancelled;
    case 'failed':
      return EXIT.failed;
    case 'completed':
      return verdict === 'verified' || verdict === 'unverified' ? EXIT.ok : EXIT.failed;
  }
}
