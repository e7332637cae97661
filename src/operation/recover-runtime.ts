/**
 * The runtime half of `uh mission recover`: rebuild the operation's runtime_config (mission +
 * adapter manifest, strict parse), open its runtime journal, and ask the adapter's optional
 * `recover()` what became of the run. Reads only; never starts a run. Returns null when the
 * runtime has no `recover()` (the caller settles by `--settle` as before).
 *   - inline (`recoverOperationRuntime`): the operation dir's `mission.json` and `runtime-journal.json`;
 *   - queue (`recoverQueuedRuntime`): the record's job mission and its Redis journal (read-only
 *     here: recover settles the record itself). The runtime's own state must be reachable from
 *     this host (codex-app-server: the same CODEX_HOME).
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MissionSchema, type Mission } from '../shared/contracts/mission.js';
import type { QueueRecord } from '../shared/queue/operation-store.js';
import type { RuntimeJournalV1 } from '../shared/runtime/v1/runtime-context.js';
import { invalidInput } from '../shared/errors.js';
import { silentLogger, type Logger } from '../shared/logger.js';
import { spawnGroup } from '../shared/process/spawn-group.js';
import type { RecoveryV1 } from '../shared/runtime/v1/index.js';
import { fileJournal } from './file-journal.js';
import { operationDir, readRecord } from './operation-files.js';
import type { RuntimeCatalog } from './ports.js';
import { resolveRuntime } from './resolve-runtime.js';

export interface RuntimeRecovery {
  runtime: string;
  recovery: RecoveryV1;
}

export async function recoverOperationRuntime(
  stateDir: string,
  operationId: string,
  runtimes: RuntimeCatalog,
  options: { env?: Readonly<Record<string, string | undefined>>; logger?: Logger } = {},
): Promise<RuntimeRecovery | null> {
  const record = readRecord(stateDir, operationId);
  if (!record) throw invalidInput(`no operation ${operationId} in ${stateDir}`);
  const dir = operationDir(stateDir, operationId);
  // mission.json is stored redacted: a secret reads as "[redacted]", which recovery (reading the
  // runtime's own records) does not need.
  const mission = MissionSchema.parse(JSON.parse(readFileSync(join(dir, 'mission.json'), 'utf8')));
  return recoverTarget(
    stateDir,
    runtimes,
    {
      mission,
      runtime: record.runtime,
      missionId: record.mission_id,
      operationId,
      journal: fileJournal(join(dir, 'runtime-journal.json')),
      logDir: dir,
      sandboxPath: record.sandbox_path,
    },
    options,
  );
}

interface RecoverTarget {
  mission: Mission;
  runtime: string;
  missionId: string;
  operationId: string;
  journal: RuntimeJournalV1;
  logDir: string;
  sandboxPath: string | null;
}

async function recoverTarget(
  stateDir: string,
  runtimes: RuntimeCatalog,
  t: RecoverTarget,
  options: { env?: Readonly<Record<string, string | undefined>>; logger?: Logger },
): Promise<RuntimeRecovery | null> {
  const resolved = await resolveRuntime(t.mission, t.runtime, stateDir, runtimes);
  if (!resolved.adapter.recover) return null;
  const recovery = await resolved.adapter.recover(resolved.config, {
    journal: t.journal,
    logDir: t.logDir,
    ...(t.sandboxPath && existsSync(t.sandboxPath) ? { workDir: t.sandboxPath } : {}),
    spawn: spawnGroup,
    env: options.env ?? process.env, // env passthrough: the runtime's recovery child inherits ours
    now: () => Date.now(),
    logger: options.logger ?? silentLogger,
    mission: { missionId: t.missionId, operationId: t.operationId },
  });
  return { runtime: t.runtime, recovery };
}

/** Queue mode: the job's mission, the record's journal (a snapshot; recovery's writes are dropped). */
export async function recoverQueuedRuntime(
  record: QueueRecord,
  stateDir: string,
  runtimes: RuntimeCatalog,
  options: { env?: Readonly<Record<string, string | undefined>>; logger?: Logger } = {},
): Promise<RuntimeRecovery | null> {
  const snapshot = record.journal;
  return recoverTarget(
    stateDir,
    runtimes,
    {
      mission: MissionSchema.parse(record.job.mission),
      runtime: record.runtime,
      missionId: record.mission_id,
      operationId: record.operation_id,
      journal: { get: async () => snapshot, put: async () => undefined },
      logDir: mkdtempSync(join(tmpdir(), 'uh-recover-')),
      sandboxPath: record.sandbox_path,
    },
    options,
  );
}
