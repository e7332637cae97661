/**
 * Load a suite (docs/batch.md "Suites"): a directory whose entries are tasks (a subdirectory with
 * `task.toml` is a Harbor task, one with `mission.yaml` ours, a top-level `*.yaml` mission file
 * too), optionally with a `suite.yaml`; or a `uh.suite.v0` file listing task paths. Every task is
 * validated before anything is written; a refused task names itself and why.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { z } from 'zod';
import { IdSchema, ID_PATTERN } from '../../shared/contracts/ids.js';
import { readDocument } from '../../shared/contracts/load-file.js';
import { loadMissionFile, type RepositoryPolicy } from '../../shared/contracts/load-mission.js';
import { parseOrThrow } from '../../shared/contracts/zod-issues.js';
import type { Suite, SuiteTask } from '../../shared/batch/suite-plan.js';
import { invalidInput } from '../../shared/errors.js';
import { importHarborTask, isHarborTask } from './harbor-task.js';
import type { Env } from '../../shared/config.js';

export const SuiteFileSchema = z.strictObject({
  schema_version: z.literal('uh.suite.v0'),
  suite_id: IdSchema,
  title: z.string().max(200).optional(),
  runtimes: z.array(IdSchema).max(32).default([]),
  trials: z.number().int().positive().max(20).optional(),
  runtime_config_overrides: z.record(IdSchema, z.record(z.string(), z.unknown())).default({}),
  /** Task paths (directories or mission files), relative to this file. Default: the folder's entries. */
  tasks: z.array(z.string().min(1)).max(500).optional(),
});

const MISSION_NAMES = ['mission.yaml', 'mission.yml', 'mission.json'];

/** Whether a path is a suite (a directory, or a uh.suite.v0 file) rather than one mission file. */
export function isSuitePath(path: string): boolean {
  if (!existsSync(path)) return false;
  if (statSync(path).isDirectory()) return true;
  try {
    const doc = readDocument(path) as { schema_version?: unknown };
    return doc?.schema_version === 'uh.suite.v0';
  } catch {
    return false;
  }
}

function taskPaths(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .map((name) => join(dir, name))
    .filter((p) => {
      if (statSync(p).isDirectory()) return isHarborTask(p) || MISSION_NAMES.some((m) => existsSync(join(p, m)));
      const name = basename(p);
      return ['.yaml', '.yml', '.json'].includes(extname(p)) && !name.startsWith('suite.');
    });
}

interface LoadOptions {
  cacheDir: string;
  /** The environment git runs with (the config's childEnv). */
  env: Env;
  policy: RepositoryPolicy;
  runtimes: string[];
}

function loadTask(path: string, options: LoadOptions): SuiteTask {
  const isDir = statSync(path).isDirectory();
  const taskId = isDir ? basename(path) : basename(path, extname(path));
  if (!ID_PATTERN.test(taskId)) throw invalidInput(`task ${path}: "${taskId}" is not a valid task id`);
  if (isDir && isHarborTask(path)) {
    const imported = importHarborTask(path, taskId, options.runtimes, options);
    return { task_id: taskId, format: 'harbor', mission: imported.mission, solution: imported.solution };
  }
  const file = isDir ? join(path, MISSION_NAMES.find((m) => existsSync(join(path, m))) as string) : path;
  return { task_id: taskId, format: 'mission', mission: loadMissionFile(file, options.policy) };
}

/** The suite at `path`; `runtimes` from `--runtimes` (else the suite's). */
export function loadSuite(path: string, flags: LoadOptions): Suite {
  const full = resolve(path);
  const isDir = statSync(full).isDirectory();
  const fileOf = isDir ? ['suite.yaml', 'suite.yml'].map((n) => join(full, n)).find((p) => existsSync(p)) : full;
  const file = fileOf ? parseOrThrow(SuiteFileSchema, readDocument(fileOf), fileOf) : null;
  const base = isDir ? full : dirname(full);
  const runtimes = flags.runtimes.length > 0 ? flags.runtimes : (file?.runtimes ?? []);
  if (runtimes.length === 0)
    throw invalidInput(`suite ${path}: no runtimes`, [], 'pass --runtimes a,b or list runtimes: in the suite file');
  const paths = file?.tasks ? file.tasks.map((t) => resolve(base, t)) : taskPaths(base);
  const tasks = paths.map((p) => {
    if (!existsSync(p)) throw invalidInput(`suite ${path}: task ${p} does not exist`);
    return loadTask(p, { ...flags, runtimes });
  });
  const ids = tasks.map((t) => t.task_id);
  const twice = ids.find((id, i) => ids.indexOf(id) !== i);
  if (twice) throw invalidInput(`suite ${path}: task id ${twice} appears twice`);
  const suiteId = file?.suite_id ?? basename(base);
  if (!ID_PATTERN.test(suiteId))
    throw invalidInput(
      `suite ${path}: "${suiteId}" is not a valid suite id`,
      [],
      'name it with suite_id in suite.yaml',
    );
  return {
    suite_id: suiteId,
    title: file?.title ?? `Suite ${suiteId}`,
    tasks,
    runtimes,
    trials: file?.trials ?? null,
    runtime_config_overrides: file?.runtime_config_overrides ?? {},
  };
}
