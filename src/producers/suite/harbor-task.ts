/**
 * A Harbor-format task directory imported as a mission (docs/batch.md "Harbor tasks"):
 *
 *   task.toml        [agent].timeout_sec → timeout_seconds, [verifier].timeout_sec → the verifier's
 *   instruction.md   → objective
 *   tests/test.sh    → verification_hidden (copied next to the sandbox only after the agent, run
 *                      last, writes reward.txt / reward.json into $UH_VERIFIER_LOGS_DIR)
 *   solution/solve.sh  the oracle (`--oracle`)
 *   environment/     a plain directory: the repository (committed once into a repository in the
 *                    cache, deterministically); a Dockerfile or `[environment].docker_image`
 *                    needs a container backend, which uh does not have: refused with the reason.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { LIMITS } from '../../shared/contracts/input-limits.js';
import { MissionSchema, type Mission } from '../../shared/contracts/mission.js';
import { parseOrThrow } from '../../shared/contracts/zod-issues.js';
import { readHiddenVerifier } from '../../operation/hidden-verifier.js';
import { invalidInput, UhError } from '../../shared/errors.js';
import { GIT_HARDENING_ARGS, hardenedGitEnv } from '../../shared/git-hardening.js';
import { parseTaskToml, type TaskToml } from './task-toml.js';
import type { Env } from '../../shared/config.js';
import { makeDir } from '../../shared/fs/make-dir.js';

export const isHarborTask = (dir: string): boolean => existsSync(join(dir, 'task.toml'));

const seconds = (v: unknown, fallback: number): number => (typeof v === 'number' && v > 0 ? Math.ceil(v) : fallback);

/** Why the task cannot run here (a container image), or null. */
export function containerNeed(dir: string, toml: TaskToml): string | null {
  const image = toml.environment?.docker_image;
  if (image !== undefined) return `[environment].docker_image = ${image}`;
  for (const f of ['Dockerfile', 'docker-compose.yaml', 'docker-compose.yml'])
    if (existsSync(join(dir, 'environment', f))) return `environment/${f}`;
  return null;
}

function git(cwd: string, args: string[], env: Env): string {
  return execFileSync('git', [...GIT_HARDENING_ARGS, ...args], {
    cwd,
    env: {
      ...hardenedGitEnv(env),
      GIT_AUTHOR_DATE: '2000-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2000-01-01T00:00:00Z',
    },
    encoding: 'utf8',
  }).trim();
}

/** The environment directory as a repository in the cache: one commit, same content → same commit. */
export function environmentRepository(envDir: string, cacheDir: string, env: Env): string {
  const work = join(cacheDir, 'harbor-envs', `${basename(envDir)}-${process.pid}-${Date.now()}`);
  makeDir(work);
  git(work, ['init', '-q', '-b', 'main'], env);
  git(work, ['--work-tree', envDir, 'add', '-A', '.'], env);
  const tree = git(work, ['write-tree'], env);
  const final = join(cacheDir, 'harbor-envs', tree);
  if (existsSync(final)) {
    rmSync(work, { recursive: true, force: true }); // our own fresh scratch repository
    return final;
  }
  const commit = git(
    work,
    ['-c', 'user.name=uh', '-c', 'user.email=uh@localhost', 'commit-tree', tree, '-m', 'harbor environment'],
    env,
  );
  git(work, ['update-ref', 'refs/heads/main', commit], env);
  try {
    renameSync(work, final);
  } catch {
    // another producer made it first: same tree, same commit
    rmSync(work, { recursive: true, force: true });
  }
  return final;
}

export interface HarborImport {
  mission: Mission;
  /** `solution/solve.sh`, when the task has one (the oracle). */
  solution: string | null;
}

/** The task as a mission, or a clear refusal (exit 2). `runtimes`: the suite's. */
export function importHarborTask(
  dir: string,
  taskId: string,
  runtimes: string[],
  where: { cacheDir: string; env: Env },
): HarborImport {
  const toml = parseTaskToml(readFileSync(join(dir, 'task.toml'), 'utf8'), join(dir, 'task.toml'));
  const need = containerNeed(dir, toml);
  if (need)
    throw new UhError('invalid_input', `task ${taskId} needs a container image (${need})`, {
      hint: 'uh runs a task whose environment/ is a plain directory (the repository); there is no container backend here',
    });
  const instructionPath = join(dir, 'instruction.md');
  if (!existsSync(instructionPath)) throw invalidInput(`task ${taskId}: no instruction.md`);
  if (!existsSync(join(dir, 'tests', 'test.sh'))) throw invalidInput(`task ${taskId}: no tests/test.sh`);
  const envDir = join(dir, 'environment');
  if (!existsSync(envDir) || !statSync(envDir).isDirectory() || readdirSync(envDir).length === 0)
    throw invalidInput(`task ${taskId}: environment/ is missing or empty`, [], 'environment/ holds the repository');
  readHiddenVerifier(join(dir, 'tests')); // refuse a bad verifier here, before anything is written
  const objective = readFileSync(instructionPath, 'utf8').slice(0, LIMITS.objectiveChars);
  const title = (objective.split('\n').find((l) => l.trim() !== '') ?? taskId).replace(/^#+\s*/, '').slice(0, 120);
  const mission = parseOrThrow(
    MissionSchema,
    {
      schema_version: 'uh.mission.v0',
      mission_id: taskId,
      operation_id: taskId,
      title,
      objective,
      repository: { url: environmentRepository(envDir, where.cacheDir, where.env), ref: 'main' },
      runtime: runtimes,
      timeout_seconds: seconds(toml.agent?.timeout_sec, 1800),
      verification_hidden: {
        path: join(dir, 'tests'),
        timeout_seconds: seconds(toml.verifier?.timeout_sec, 300),
      },
      labels: { 'uh.task.format': 'harbor' },
    },
    join(dir, 'task.toml'),
  );
  const solve = join(dir, 'solution', 'solve.sh');
  return { mission, solution: existsSync(solve) ? solve : null };
}
