/**
 * One fleet of a hostile-agent suite (test/security/): a user's checkout, a cache dir, a fake
 * $HOME and a Redis prefix, with uh run inline (`uh mission run`) or through one worker shared by
 * the fleet's missions (`uh worker start` + `uh mission submit --wait`), isolated (bwrap, auto)
 * or with UH_ISOLATION=off, and as one user.
 *
 * Users: as root, each fleet runs once as root (CI containers, self-hosted runners) and once as the
 * system user `uh` (infra/ deploys the worker as `uh`), which `ensureUser` creates when missing;
 * the fleet's dirs are then owned by uh and the CLI and the worker run with uh's uid and gid.
 * Not root, the host has no other user to offer: every fleet runs as the current user, and the
 * table (`fleetTable`) names that user, so no case is skipped, only absent.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { removeTree } from '../../src/shared/fs/deep-tree.js';
import { treeFingerprint } from '../security/isolation-helpers.js';
import { runCli } from './cli.js';
import { makeRepo } from './git-repo.js';
import type { TestRedis } from './redis.js';
import { hostTempDir, tempDir } from './temp.js';
import { startWorker, type WorkerProcess } from './worker-process.js';

export type Mode = 'inline' | 'worker';
export type Isolation = 'auto' | 'off';

/** The deployment's user (infra/), created on a root host for these tests. */
export const DEPLOY_USER = 'uh';

const isRoot = process.getuid?.() === 0;

/** The users this host can run uh as: root and `uh` as root, else only the current user. */
export const FLEET_USERS: readonly string[] = isRoot ? ['root', DEPLOY_USER] : [userInfo().username];

/**
 * The `overlay` project (vitest.config.ts) sets `UH_SANDBOX_BACKEND`: only isolated rows get an
 * overlay sandbox, so only those rows run there (the rest run in `integration`).
 */
const ONLY_ISOLATED = (process.env.UH_SANDBOX_BACKEND ?? 'worktree') !== 'worktree';

/** Every (mode, isolation, user) row this host can run, for `describe.each`. */
export function fleetTable(
  modes: readonly Mode[] = ['inline', 'worker'],
  isolations: readonly Isolation[] = ONLY_ISOLATED ? ['auto'] : ['auto', 'off'],
): Array<[Mode, Isolation, string]> {
  return modes.flatMap((m) => isolations.flatMap((i) => FLEET_USERS.map((u): [Mode, Isolation, string] => [m, i, u])));
}

/**
 * Rows worth running as the deployment's user: isolated ones. Unisolated, the defences left are
 * uh's own (hardened git, uh's records), the same whatever the uid, so those rows run as root
 * only; this keeps the doubled suites inside CI's time.
 */
export const asDeployed = ([, isolation, user]: [Mode, Isolation, string]): boolean =>
  user !== DEPLOY_USER || isolation === 'auto';

/** A uid and gid to run as; null: this process's own. */
export type RunAs = { uid: number; gid: number } | null;

/**
 * `user`'s ids, creating the system user `uh` on a root host when it is missing. Idempotent and
 * safe when several test files call it at once: one `flock` serialises the check and the
 * `useradd`, and an "already exists" (exit 9) from a run outside the lock is no failure.
 */
export function ensureUser(user: string): RunAs {
  if (!isRoot || user === userInfo().username) return null;
  if (user !== DEPLOY_USER) throw new Error(`the fleet fixture only creates the user ${DEPLOY_USER}, not ${user}`);
  const add = `id -u ${user} >/dev/null 2>&1 || useradd --system --user-group --create-home --home-dir /home/uh-test --shell /usr/sbin/nologin ${user} || id -u ${user} >/dev/null`;
  const r = spawnSync('flock', ['-w', '60', join(tmpdir(), 'uh-test-useradd.lock'), 'sh', '-c', add], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`cannot create the user ${user}: ${r.stderr || r.error?.message}`);
  const id = (flag: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Give `path` and everything under it to `as` (no symlink followed). */
export function chownTree(path: string, as: RunAs): void {
  if (as === null) return;
  const walk = (p: string): void => {
    chownSync(p, as.uid, as.gid);
    if (lstatSync(p).isDirectory()) for (const e of readdirSync(p)) walk(join(p, e));
  };
  walk(path);
}

export interface Fleet {
  mode: Mode;
  isolation: Isolation;
  /** Who runs uh (the CLI and the worker). */
  user: string;
  as: RunAs;
  /** The user's checkout (the mission's repository). */
  repo: string;
  cacheDir: string;
  /** The $HOME uh runs with. */
  home: string;
  prefix: string;
  worker: WorkerProcess | null;
  /** The worker's state dir (where its operations' artifacts are), or null inline. */
  workerStateDir: string | null;
  redisUrl: string;
  /** A new temp dir owned by the fleet's user, removed by `stopFleet`. */
  tempDir: (prefix: string) => string;
  dirs: string[];
  /** The fleet's extra environment (`FleetOptions.env`). */
  env: Record<string, string>;
}

export interface FleetOptions {
  mode: Mode;
  isolation: Isolation;
  user: string;
  redis: TestRedis;
  /** Names the fleet's temp dirs and Redis prefix. */
  tag: string;
  /** The checkout's first commit. */
  files: Record<string, string>;
  /** Put the cache dir outside /tmp (under /var/tmp), where a sandbox's private /tmp does not hide it. */
  cacheOutsideTmp?: boolean;
  /** Called before the worker starts, with the dirs made (files to plant in home or cache). */
  prepare?: (fleet: Fleet) => void;
  /** More environment for every uh the fleet runs (the CLI and the worker), over `fleetEnv`'s. */
  env?: Record<string, string>;
}

let counter = 0;

/** The environment uh runs with for `fleet` (what the test passes on top of its own). */
export function fleetEnv(fleet: Fleet): Record<string, string> {
  const user: Record<string, string> = fleet.as === null ? {} : { USER: fleet.user, LOGNAME: fleet.user };
  return {
    ...user,
    ...fleet.env,
    UH_CACHE_DIR: fleet.cacheDir,
    UH_ISOLATION: fleet.isolation,
    HOME: fleet.home,
    XDG_CONFIG_HOME: join(fleet.home, '.config'),
    REDIS_URL: fleet.redisUrl,
    UH_REDIS_PREFIX: fleet.prefix,
  };
}

/** A fleet with its dirs made (owned by its user) and, in worker mode, its worker ready. */
export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const as = ensureUser(o.user);
  const dirs: string[] = [];
  const own = (dir: string): string => {
    chownTree(dir, as);
    dirs.push(dir);
    return dir;
  };
  const tag = `${o.tag}-${o.mode}-${o.isolation}-${o.user}-${++counter}`;
  const fleet: Fleet = {
    mode: o.mode,
    isolation: o.isolation,
    user: o.user,
    as,
    repo: own(makeRepo(o.files)),
    cacheDir: own(o.cacheOutsideTmp ? hostTempDir(`uh-${o.tag}-cache-`) : tempDir(`uh-${o.tag}-cache-`)),
    home: own(tempDir(`uh-${o.tag}-home-`)),
    prefix: o.redis.prefix(tag),
    worker: null,
    workerStateDir: null,
    redisUrl: o.redis.url,
    tempDir: (prefix) => own(tempDir(prefix)),
    dirs,
    env: o.env ?? {},
  };
  o.prepare?.(fleet);
  chownTree(fleet.home, as);
  chownTree(fleet.cacheDir, as);
  if (o.mode === 'worker') {
    fleet.workerStateDir = fleet.tempDir(`uh-${o.tag}-wstate-`);
    const args = ['--state-dir', fleet.workerStateDir, '--runtime', 'command', '--concurrency', '1'];
    fleet.worker = await startWorker(args, { cwd: fleet.repo, env: { ...fleetEnv(fleet), UH_LOG_LEVEL: 'warn' }, as });
  }
  return fleet;
}

export async function stopFleet(fleet: Fleet | undefined): Promise<void> {
  await fleet?.worker?.stop('SIGKILL');
  // removeTree: a sandbox deeper than PATH_MAX (an attack) is removed too.
  fleet?.dirs.forEach((d) => removeTree(d));
}

/** A mission for the `command` runtime whose agent is `sh -c script`; `patch` merges over it. */
export function commandMission(
  fleet: Fleet,
  script: string,
  patch: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-fleet',
    operation_id: `op-fleet-${process.pid}-${++counter}`,
    title: 'hostile agent',
    objective: 'attack',
    repository: { url: fleet.repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['/bin/sh', '-c', script], kill_grace_ms: 500 } },
    timeout_seconds: 60,
    ...patch,
  };
}

export interface Ran {
  /** The receipt (`--json`), whatever the verdict. */
  receipt: any;
  /** Where the operation's artifacts (diff.patch, events) are. */
  operationDir: string;
}

/** Run `mission` as the fleet's user: inline, or submitted to its worker and awaited. */
export async function runMission(fleet: Fleet, mission: Record<string, unknown>): Promise<Ran> {
  const dir = fleet.tempDir('uh-fleet-mission-');
  const state = fleet.tempDir('uh-fleet-state-');
  writeFileSync(join(dir, 'mission.yaml'), stringify(mission));
  chownTree(dir, fleet.as);
  const verb = fleet.mode === 'inline' ? ['run'] : ['submit', '--wait'];
  const args = ['mission', ...verb, join(dir, 'mission.yaml'), '--json', '--state-dir', state];
  const result = await runCli(args, { cwd: fleet.repo, env: fleetEnv(fleet), as: fleet.as });
  let receipt: any;
  try {
    const out = JSON.parse(result.stdout);
    receipt = out.receipt ?? out;
  } catch {
    throw new Error(`uh (as ${fleet.user}) exited ${result.code}: ${result.stderr}\n${result.stdout}`);
  }
  const operationDir = join(fleet.workerStateDir ?? state, 'operations', String(mission.operation_id));
  return { receipt, operationDir };
}

/** `runMission` of `commandMission`, the receipt only. */
export async function runScript(fleet: Fleet, script: string, patch: Record<string, unknown> = {}): Promise<any> {
  return (await runMission(fleet, commandMission(fleet, script, patch))).receipt;
}

/** The receipt keys in the fleet's cache dir (HMAC and Ed25519), as they are now: none must change. */
export function signingKeys(fleet: Fleet): Record<string, string | null> {
  const read = (name: string): string | null => {
    try {
      return readFileSync(join(fleet.cacheDir, name), 'utf8');
    } catch {
      return null;
    }
  };
  return { 'receipt.key': read('receipt.key'), 'receipt-signing.pem': read('receipt-signing.pem') };
}

/** Each pooled sandbox's worktree (the warm pool a later mission takes from), `.git` aside. */
export function poolTrees(fleet: Fleet): string[] {
  const root = join(fleet.cacheDir, 'sandboxes');
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((n) => n.startsWith('pool') && statSync(join(root, n)).isDirectory())
    .map((n) => treeFingerprint(join(root, n), skipGit));
}

/** The pool as it is now, for a before/after comparison. */
export function poolFingerprint(fleet: Fleet): string {
  return poolTrees(fleet).join('\n');
}

/**
 * Whether every pooled sandbox is pristine: its tree is the user's checkout's (the base commit),
 * so a later mission that takes it starts from what was asked, whatever a mission took or returned.
 */
export function poolPristine(fleet: Fleet): boolean {
  const base = treeFingerprint(fleet.repo, skipGit);
  return poolTrees(fleet).every((t) => t === base);
}

const skipGit = (rel: string): boolean => rel === '.git' || rel.startsWith('.git/');

/**
 * The uid the fleet's agent has, as it sees it: isolated as root, `nobody` (65534) in a user
 * namespace of its own; otherwise the uid uh runs as (isolated unprivileged, bwrap maps it as is).
 */
export function agentUid(fleet: Fleet): number {
  const uid = fleet.as?.uid ?? process.getuid?.() ?? -1;
  return uid === 0 && fleet.isolation === 'auto' ? 65534 : uid;
}

/**
 * The fleet's first mission, benign: verified, isolated as asked (`isolation: bwrap` unless off),
 * in the sandbox backend the project asks for (an overlay for an isolated row of `overlay`), and its agent runs as the fleet's user (its `id -u` is in the diff). Creates the mirror and
 * the receipt keys, so baselines taken after it cover them.
 */
export async function firstMission(fleet: Fleet, patch: Record<string, unknown> = {}): Promise<any> {
  const { receipt, operationDir } = await runMission(
    fleet,
    commandMission(fleet, 'echo ok > src/ok.txt; id -u > src/uid.txt', patch),
  );
  if (receipt.verdict !== 'verified' || receipt.isolation?.kind !== (fleet.isolation === 'auto' ? 'bwrap' : 'none'))
    throw new Error(`the first mission of a fleet as ${fleet.user}: ${JSON.stringify(receipt)}`);
  const backend = ONLY_ISOLATED && fleet.isolation === 'auto' ? 'overlay' : 'git-worktree';
  if (receipt.sandbox?.backend !== backend)
    throw new Error(`the first mission of a fleet expected a ${backend} sandbox: ${JSON.stringify(receipt.sandbox)}`);
  const patchText = readFileSync(join(operationDir, 'diff.patch'), 'utf8');
  if (!new RegExp(`^\\+${agentUid(fleet)}$`, 'm').test(patchText))
    throw new Error(`the agent of a fleet as ${fleet.user} is not uid ${agentUid(fleet)}:\n${patchText}`);
  return receipt;
}
