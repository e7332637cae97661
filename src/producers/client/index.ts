/**
 * `ultimate-harness/client`: submit, attach, wait, watch, cancel and collect queue-mode
 * operations from a program, over Redis or the HTTP API, with the CLI's errors and exit codes.
 *
 *   const uh = await createClient({ redisUrl: 'redis://127.0.0.1:6379' });
 *   const { operationId } = await uh.submit(mission);
 *   const settled = await uh.wait(operationId);   // settled.exitCode: what `uh mission submit --wait` exits with
 *   await uh.close();
 */
import { exitCodeForError } from '../cli/cli-kit.js';
import type { ClientOptions, UhClient } from './client-types.js';

export type * from './client-types.js';
export { UhError, OperationConflictError, type UhErrorKind } from '../../shared/errors.js';
export { EXIT } from '../../shared/contracts/exit-codes.js';

/** The exit code the CLI would give for this error (2 invalid input/conflict/not found, 3 unavailable, 1 else). */
export const exitCodeOf = (error: unknown): number => exitCodeForError(error);

export async function createClient(options: ClientOptions): Promise<UhClient> {
  if ('apiUrl' in options) return (await import('./http-client.js')).httpClient(options);
  return (await import('./redis-client.js')).redisClient(options);
}
