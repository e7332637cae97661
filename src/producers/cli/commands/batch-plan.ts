/** What `uh batch run|submit <path>` runs: a suite (directory or uh.suite.v0 file) or one mission file. */
import { readFileSync } from 'node:fs';
import type { UhConfig } from '../../../shared/config.js';
import { batchRuntimes, parseTrials, planMissionBatch, type BatchPlan } from '../../../shared/batch/record.js';
import { planSuiteBatch, type Suite } from '../../../shared/batch/suite-plan.js';
import { loadMissionFile, repositoryPolicy } from '../../../shared/contracts/load-mission.js';
import { invalidInput } from '../../../shared/errors.js';
import { isSuitePath, loadSuite } from '../../suite/load-suite.js';

export const PLAN_OPTIONS = {
  runtimes: { type: 'string' },
  trials: { type: 'string' },
  id: { type: 'string' },
  oracle: { type: 'boolean', default: false },
} as const;

/**
 * `--oracle`: every task's `solution/solve.sh` as the agent (the built-in `command` runtime, the
 * script's text passed in argv, so it runs wherever the sandbox is): a suite whose oracle does not
 * pass has a broken task. A task without a solution is refused.
 */
function oracleSuite(suite: Suite): Suite {
  const tasks = suite.tasks.map((t) => {
    if (!t.solution) throw invalidInput(`--oracle: task ${t.task_id} has no solution/solve.sh`);
    const argv = ['bash', '-c', readFileSync(t.solution, 'utf8'), 'solve.sh'];
    return { ...t, mission: { ...t.mission, runtime: ORACLE, runtime_config_overrides: { [ORACLE]: { argv } } } };
  });
  return { ...suite, suite_id: `${suite.suite_id}-oracle`, tasks, runtimes: [ORACLE] };
}
const ORACLE = 'command';

const list = (flag: unknown): string[] =>
  typeof flag === 'string'
    ? flag
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean)
    : [];

export function planBatch(
  path: string,
  values: Record<string, unknown>,
  config: UhConfig,
  mode: 'inline' | 'queue',
): BatchPlan {
  const policy = repositoryPolicy(config.core, 'cli');
  if (!isSuitePath(path)) {
    if (values.oracle) throw invalidInput('--oracle: only for a suite of Harbor tasks');
    if (values.id !== undefined)
      throw invalidInput('--id: only for a suite (the mission names its batch: operation_id)');
    const mission = loadMissionFile(path, policy);
    const runtimes = batchRuntimes(mission, values.runtimes as string | undefined);
    return planMissionBatch(mission, runtimes, parseTrials(values.trials as string | undefined), mode);
  }
  if (values.oracle && values.runtimes !== undefined)
    throw invalidInput('--oracle: the oracle is the runtime (no --runtimes)');
  const loaded = loadSuite(path, {
    runtimes: values.oracle ? [ORACLE] : list(values.runtimes),
    cacheDir: config.core.cacheDir,
    env: config.childEnv,
    policy,
  });
  const suite = values.oracle ? oracleSuite(loaded) : loaded;
  const trials = values.trials === undefined ? (suite.trials ?? 1) : parseTrials(values.trials as string);
  if (new Set(suite.runtimes).size !== suite.runtimes.length)
    throw invalidInput(`--runtimes: a runtime is listed twice (${suite.runtimes.join(', ')})`);
  return planSuiteBatch(suite, suite.runtimes, trials, mode, values.id as string | undefined);
}
