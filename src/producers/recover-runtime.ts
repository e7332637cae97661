/**
 * The runtime half of `uh mission recover` for an operation kept in a local state dir (inline
 * runs; in queue mode, on the worker host that ran it): rebuild the operation's runtime_config
 * from its `mission.json` and the adapter manifest, open its `runtime-journal.json`, and ask the
 * adapter's optional `recover()` what became of the run. Reads only; never starts a run.
 * Returns null when the runtime has no `recover()` (the caller settles by `--settle` as before).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MissionSchema } from '../shared/contracts/mission.js';
import { invalidInput } from '../shared/errors.js';
import { silentLogger, type Logger } from '../shared/logger.js';
import { spawnGroup } from '../shared/process/spawn-group.js';
import type { RecoveryV1 } from '../shared/runtime/v1/index.js';
import { fileJournal } from '../workers/state/file-journal.js';
import { operationDir, readRecord } from '../workers/state/operation-files.js';
import { resolveRuntime } from './resolve-runtime.js';

export interface RuntimeRecovery {
  runtime: string;
  recovery: RecoveryV1;
}

export async function recoverOperationRuntime(
  stateDir: string,
  operationId: string,
  options: { env?: Readonly<Record<string, string | undefined>>; logger?: Logger } = {},
): Promise<RuntimeRecovery | null> {
  const record = readRecord(stateDir, operationId);
  if (!record) throw invalidInput(`no operation ${operationId} in ${stateDir}`);
  const dir = operationDir(stateDir, operationId);
  // mission.json is stored redacted: a secret reads as "[redacted]", which recovery (reading the
  // runtime's own records) does not need.
  const mission = MissionSchema.parse(JSON.parse(readFileSync(join(dir, 'mission.json'), 'utf8')));
  const resolved = resolveRuntime(mission, record.runtime, stateDir);
  if (!resolved.adapter.recover) return null;
  const recovery = await resolved.adapter.recover(resolved.config, {
    journal: fileJournal(join(dir, 'runtime-journal.json')),
    logDir: dir,
    ...(record.sandbox_path && existsSync(record.sandbox_path) ? { workDir: record.sandbox_path } : {}),
    spawn: spawnGroup,
    env: options.env ?? process.env,
    now: () => Date.now(),
    logger: options.logger ?? silentLogger,
    mission: { missionId: record.mission_id, operationId },
  });
  return { runtime: record.runtime, recovery };
}
