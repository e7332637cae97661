import type { Logger } from '../../logger.js';
import type { SpawnGroup } from '../../process/spawn-group.js';
import type { RuntimeJournalV1 } from './runtime-context.js';
import type { RuntimeFinishedData } from './runtime-event.js';

/**
 * Context of `recover()`: what an operator command (`uh mission recover <op>`) has for an
 * operation whose worker is gone. No sandbox is required: a runtime that needs a cwd uses
 * `workDir` when the sandbox was retained, else `logDir`.
 */
export interface RecoverContextV1 {
  /** The operation's journal, as the dead run left it. */
  readonly journal: RuntimeJournalV1;
  readonly logDir: string;
  readonly workDir?: string;
  readonly spawn: SpawnGroup;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly now: () => number;
  readonly logger: Logger;
  readonly signal?: AbortSignal;
  readonly mission: { readonly missionId: string; readonly operationId: string };
}

/**
 * What recovery proved. It must never start new work for the operation.
 * - `settled`: the operation's exact run was found and is terminal; `finished` is its terminal event data.
 * - `running`: the exact run was found and is still in progress.
 * - `unknown`: the run cannot be identified (zero or several candidates, unreadable); stays UNKNOWN.
 * - `not_dispatched`: the journal proves nothing was ever sent; a fresh execution is safe.
 */
export interface RecoveryV1 {
  state: 'settled' | 'running' | 'unknown' | 'not_dispatched';
  /** One sentence for the operator. */
  reason: string;
  finished?: RuntimeFinishedData;
  thread_id?: string;
  turn_id?: string;
}
