/**
 * `uh mission recover` for an operation in the local state dir. It never runs the runtime again:
 *   running/verifying, owner alive    → nothing to do
 *   running/verifying, owner gone     → runtime never started: settled failed (`not_started`);
 *                                       runtime had started: UNKNOWN
 *   unknown → ask the runtime's `recover()` (codex-app-server reads the exact turn back):
 *             settled → a receipt from that terminal outcome; running → nothing yet;
 *             not_dispatched / unidentifiable / no recover() → settled as `--settle` (failed or
 *             cancelled) with raw `not_dispatched` or `unknown`
 * A settled receipt carries the diff and scope check of the retained sandbox (checks are not run:
 * the verdict is `unverified` or `scope_violation`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MissionSchema } from '../../shared/contracts/mission.js';
import type { Outcome } from '../../shared/contracts/runtime-result.js';
import type { Receipt } from '../../shared/contracts/receipt.js';
import { errorMessage, UhError } from '../../shared/errors.js';
import { recoverOperationRuntime } from '../../operation/recover-runtime.js';
import type { RuntimeFinishedData } from '../../shared/runtime/v1/index.js';
import { buildReceipt } from '../../operation/build-receipt.js';
import { decideVerdict } from '../results/verdict.js';
import { RUNTIME_CATALOG } from '../operation-ports.js';
import { captureDiff, type DiffCapture } from '../verification/capture-diff.js';
import { gitPathOf } from '../git-path.js';
import { checkScope } from '../verification/scope-check.js';
import { EventLog } from '../state/event-log.js';
import { fileJournal } from '../../operation/file-journal.js';
import { killLeftoverGroups } from '../../shared/process/leftover-groups.js';
import {
  operationDir,
  readRecord,
  writeRecord,
  workerAlive,
  type OperationRecord,
} from '../../operation/operation-files.js';
import { finishOperation } from '../../operation/finish-operation.js';
import type { OperationSettings } from '../../operation/settings.js';

export interface InlineRecovery {
  steps: string[];
  record: OperationRecord;
  receipt: Receipt | null;
}

export async function recoverInline(
  settings: OperationSettings,
  id: string,
  settle: 'failed' | 'cancelled',
): Promise<InlineRecovery> {
  const { stateDir } = settings;
  const record = readRecord(stateDir, id);
  if (!record) throw new UhError('not_found', `no operation ${id} in ${stateDir}`);
  const steps: string[] = [];
  const dir = operationDir(stateDir, id);
  if (record.state === 'finished') {
    steps.push(`finished (${record.status}, ${record.verdict}): nothing to recover`);
    return { steps, record, receipt: null };
  }
  if (record.state !== 'unknown') {
    if (workerAlive(record)) {
      steps.push(`${record.state} in pid ${record.worker?.pid} on ${record.worker?.host} (alive): nothing to recover`);
      return { steps, record, receipt: null };
    }
    if (!record.runtime_started) {
      steps.push(
        `pid ${record.worker?.pid} is gone before its runtime started: settled failed (run it again under a new operation_id)`,
      );
      return settleWith(settings, record, dir, steps, {
        status: 'failed',
        raw: 'not_started',
        message: 'the uh process died before the runtime started',
        timed_out: false,
      });
    }
    record.state = 'unknown';
    record.updated_at = new Date().toISOString();
    writeRecord(stateDir, record);
    steps.push(`pid ${record.worker?.pid} is gone after its runtime started → unknown`);
  }
  const killed = killLeftoverGroups(await fileJournal(join(dir, 'runtime-journal.json')).get());
  if (killed.length > 0) steps.push(`killed the runtime's leftover process group(s): ${killed.join(', ')}`);
  let finished: RuntimeFinishedData | undefined;
  let outcome: Outcome | undefined;
  try {
    const fromRuntime = await recoverOperationRuntime(stateDir, id, RUNTIME_CATALOG);
    if (fromRuntime === null) steps.push(`runtime ${record.runtime} cannot recover runs: settling as ${settle}`);
    else {
      const r = fromRuntime.recovery;
      steps.push(`runtime says ${r.state}: ${r.reason}`);
      if (r.state === 'running') return { steps, record, receipt: null };
      if (r.state === 'settled' && r.finished) {
        finished = r.finished;
        outcome = r.finished.outcome;
      } else if (r.state === 'not_dispatched') {
        outcome = {
          status: settle,
          raw: 'not_dispatched',
          message: `nothing was sent to the runtime (${r.reason}); settled by uh mission recover`,
          hint: 'run it again under a new operation_id',
          timed_out: false,
        };
      }
    }
  } catch (error) {
    steps.push(`runtime recovery failed: ${errorMessage(error)}`);
  }
  outcome ??= {
    status: settle,
    raw: 'unknown',
    message: 'dispatch could not be proven; settled by uh mission recover without running again',
    hint: `inspect ${record.sandbox_path ?? dir}; to run again, use a new operation_id`,
    timed_out: false,
  };
  return settleWith(settings, record, dir, steps, outcome, finished);
}

async function settleWith(
  settings: OperationSettings,
  record: OperationRecord,
  dir: string,
  steps: string[],
  outcome: Outcome,
  finished?: RuntimeFinishedData,
): Promise<InlineRecovery> {
  const mission = MissionSchema.parse(JSON.parse(readFileSync(join(dir, 'mission.json'), 'utf8')));
  let diff: DiffCapture | null = null;
  if (record.sandbox_path && existsSync(record.sandbox_path) && record.base_commit) {
    diff = await captureDiff(record.sandbox_path, record.base_commit, join(dir, 'diff.patch'), dir, {
      git: gitPathOf(settings),
      capBytes: settings.diff.capBytes,
    });
    steps.push(`diff of the retained sandbox: ${diff.changed.length} file(s)`);
  }
  const violations = diff ? [...checkScope(diff.changed, mission.scope), ...diff.flagged] : [];
  const now = new Date();
  const receipt = buildReceipt({
    mission,
    contractDigest: record.contract_digest,
    promptDigest: record.prompt_digest,
    baseCommit: record.base_commit,
    runtime: {
      adapter_id: record.runtime,
      runtime_kind: record.runtime,
      session_id: finished?.session_id ?? record.session_id ?? null,
      thread_id: finished?.thread_id ?? record.thread_id ?? null,
      turn_id: finished?.turn_id ?? record.turn_id ?? null,
    },
    attempt: record.attempt,
    mode: 'inline',
    startedAt: new Date(record.created_at),
    finishedAt: now,
    timings: {},
    outcome,
    usage: finished?.usage ?? {},
    finalMessage: finished?.final_message ?? '',
    finalMessageSource: finished?.final_message_source ?? 'none',
    diff,
    violations,
    checks: [],
    verdict: decideVerdict({
      scopeViolations: violations.length,
      checksDeclared: mission.verification.length,
      checks: [],
    }),
    sandbox: { path: record.sandbox_path, retained: record.sandbox_path !== null },
    secrets: [],
  });
  const lines = existsSync(join(dir, 'events.jsonl'))
    ? readFileSync(join(dir, 'events.jsonl'), 'utf8').split('\n').filter(Boolean).length
    : 0;
  const events = new EventLog(join(dir, 'events.jsonl'), record.operation_id, () => now, lines);
  const target = { kind: 'files', stateDir: settings.stateDir, dir, record, events } as const;
  const ended = await finishOperation(target, {
    receipt,
    keySource: settings.receiptKey,
    event: { recovered: true },
  }).finally(() => events.close());
  steps.push(`settled as ${receipt.status} (${receipt.verdict}) with a receipt; not re-run`);
  return { steps, record, receipt: ended.receipt };
}
