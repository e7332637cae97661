/**
 * Suites: tasks × runtimes × trials as one batch. A task is a mission (ours, or a Harbor task
 * imported as one); every task × runtime × trial is its own child operation
 * `<batch>.<task>.<runtime>[.t<k>]`. The batch id is `--id`, else `<suite_id>-<8 hex>` of what the
 * batch is (tasks, runtimes, trials): the same suite again attaches, a suite with another task
 * or trial count is a new batch id, never an overwrite.
 */
import { ID_PATTERN } from '../contracts/ids.js';
import type { Mission } from '../contracts/mission.js';
import { digestOf } from '../digest.js';
import { invalidInput } from '../errors.js';
import { childOperationId, type BatchChild, type BatchPlan, type BatchRecord } from './record.js';

export interface SuiteTask {
  task_id: string;
  /** The task as a mission (its operation_id and runtime are replaced per child). */
  mission: Mission;
  format: 'mission' | 'harbor';
  /** A Harbor task's `solution/solve.sh` (the oracle), else null. */
  solution?: string | null;
}

export interface Suite {
  suite_id: string;
  title: string;
  tasks: SuiteTask[];
  /** The suite's own runtime list (`--runtimes` wins). */
  runtimes: string[];
  /** The suite's trial count (`--trials` wins). */
  trials: number | null;
  /** Per runtime id, merged into every task's overrides. */
  runtime_config_overrides: Record<string, Record<string, unknown>>;
}

/** A task's mission without what each child replaces: what makes two suites the same. */
function taskDigest(task: SuiteTask): string {
  const { runtime: _r, operation_id: _o, runtime_config_overrides: _c, ...rest } = task.mission;
  return digestOf({ task: task.task_id, mission: rest });
}

export function suiteDigest(suite: Suite, runtimes: readonly string[], trials: number): string {
  return digestOf({
    tasks: suite.tasks.map(taskDigest),
    runtimes,
    trials,
    overrides: suite.runtime_config_overrides,
  });
}

function childMission(batchId: string, task: SuiteTask, runtime: string, trial: number, trials: number, suite: Suite) {
  const stem = `${batchId}.${task.task_id}`;
  const operationId = childOperationId(stem, runtime, trial, trials);
  if (!ID_PATTERN.test(operationId))
    throw invalidInput(
      `operation_id "${operationId}" (batch.task.runtime[.tN]) is not a valid id`,
      [],
      'use a shorter --id or task name',
    );
  const overrides = {
    ...(suite.runtime_config_overrides[runtime] ?? {}),
    ...(task.mission.runtime_config_overrides[runtime] ?? {}),
  };
  const mission: Mission = {
    ...task.mission,
    operation_id: operationId,
    runtime,
    runtime_config_overrides: Object.keys(overrides).length > 0 ? { [runtime]: overrides } : {},
    labels: {
      ...task.mission.labels,
      'uh.batch': batchId,
      'uh.batch.task': task.task_id,
      'uh.batch.trial': String(trial),
    },
  };
  return mission;
}

export function planSuiteBatch(
  suite: Suite,
  runtimes: string[],
  trials: number,
  mode: 'inline' | 'queue',
  id?: string,
): BatchPlan {
  if (suite.tasks.length === 0) throw invalidInput(`suite ${suite.suite_id} has no task`);
  const digest = suiteDigest(suite, runtimes, trials);
  const batchId = id ?? `${suite.suite_id}-${digest.slice('sha256:'.length, 'sha256:'.length + 8)}`;
  if (!ID_PATTERN.test(batchId)) throw invalidInput(`batch id "${batchId}" is not a valid id`);
  const children: BatchChild[] = suite.tasks.flatMap((task) =>
    runtimes.flatMap((runtime) =>
      Array.from({ length: trials }, (_, i) => ({
        task: task.task_id,
        runtime,
        trial: i + 1,
        mission: childMission(batchId, task, runtime, i + 1, trials, suite),
      })),
    ),
  );
  const record: BatchRecord = {
    schema_version: 'uh.batch.v0',
    batch_id: batchId,
    mission_id: suite.suite_id,
    title: suite.title,
    runtimes,
    trials,
    mission_digest: digest,
    operations: children.map((c) => ({
      runtime: c.runtime,
      trial: c.trial,
      operation_id: c.mission.operation_id,
      task: c.task as string,
    })),
    tasks: suite.tasks.map((t) => t.task_id),
    suite_id: suite.suite_id,
    mode,
    created_at: new Date().toISOString(),
  };
  return { record, children };
}
