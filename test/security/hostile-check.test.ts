/**
 * A hostile check (issue 34): the agent rewrites the project's test script, which is in scope,
 * and plants a `.git` of its own (a gitfile `gitdir: /`, or a git dir whose `commondir` and
 * `objects/info/alternates` name the cache and the real $HOME). uh computes every phase's binds
 * from its own records and puts its `.git` back before the diff and the checks, so the check
 * (the agent's script, run by uh) writes nothing of the host's and reads neither the cache nor
 * $HOME; the verdict is the untampered pipeline's (verified: only the script changed).
 *
 * Inline and through a worker, isolated and with UH_ISOLATION=off: unisolated, the check can
 * write anything (nothing stops a process uh runs unisolated), so there the attack asserts the
 * uh-side defence only: the check runs on uh's `.git`, a real directory, whatever the agent left.
 * Another `.git` anywhere in the tree is a nested_repository violation.
 */
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { checkoutFingerprint, makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { treeFingerprint } from './isolation-helpers.js';

type Mode = 'inline' | 'worker';
type Isolation = 'auto' | 'off';
const dirs: string[] = [];
let redis: TestRedis;
let counter = 0;

interface Fleet {
  mode: Mode;
  isolation: Isolation;
  repo: string;
  cacheDir: string;
  home: string;
  prefix: string;
  worker: WorkerProcess | null;
}

const env = (f: Fleet): Record<string, string> => ({
  UH_CACHE_DIR: f.cacheDir,
  UH_ISOLATION: f.isolation,
  HOME: f.home,
  XDG_CONFIG_HOME: join(f.home, '.config'),
  REDIS_URL: redis.url,
  UH_REDIS_PREFIX: f.prefix,
});

async function run(f: Fleet, script: string): Promise<any> {
  const body = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-hostile-check',
    operation_id: `op-hcheck-${process.pid}-${++counter}`,
    title: 'hostile check',
    objective: 'attack through the checks',
    repository: { url: f.repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['/bin/sh', '-c', script], kill_grace_ms: 500 } },
    scope: { allowed_change_globs: ['src/**', 'test.sh'] },
    verification: [{ name: 'tests', argv: ['sh', 'test.sh'], timeout_seconds: 30 }],
    timeout_seconds: 60,
  };
  const dir = tempDir('uh-hcheck-mission-');
  const state = tempDir('uh-hcheck-state-');
  dirs.push(dir, state);
  writeFileSync(join(dir, 'mission.yaml'), stringify(body));
  const verb = f.mode === 'inline' ? ['run'] : ['submit', '--wait'];
  const args = ['mission', ...verb, join(dir, 'mission.yaml'), '--json', '--state-dir', state];
  const result = await runCli(args, { cwd: f.repo, env: env(f) });
  try {
    const out = JSON.parse(result.stdout);
    return out.receipt ?? out;
  } catch {
    throw new Error(`uh exited ${result.code}: ${result.stderr}\n${result.stdout}`);
  }
}

/** Everything the check must not touch: the user's checkout, $HOME, the cache (its pool and mirrors). */
function baseline(f: Fleet): Record<string, string> {
  return {
    checkout: checkoutFingerprint(f.repo),
    home: treeFingerprint(f.home),
    mirrors: treeFingerprint(join(f.cacheDir, 'mirrors')),
    pool: poolFingerprint(f),
  };
}

/** The pooled sandboxes' worktrees (the warm pool a later mission takes from). */
function poolFingerprint(f: Fleet): string {
  const root = join(f.cacheDir, 'sandboxes');
  if (!existsSync(root)) return '';
  return readdirSync(root)
    .filter((n) => n.startsWith('pool') && statSync(join(root, n)).isDirectory())
    .map((n) => treeFingerprint(join(root, n), (rel) => rel === '.git' || rel.startsWith('.git/')))
    .join('\n');
}

/** A check script: with `hostile`, it first tries every write and read the old plan allowed. */
function checkScript(f: Fleet, marker: string, hostile: boolean): string {
  const tries = [
    `echo pwned > /uh-hcheck-${process.pid}`,
    `echo pwned >> ${f.repo}/README.md`,
    `echo pwned > ${f.home}/.profile`,
    `echo pwned > ${f.cacheDir}/pwned`,
    `for d in ${f.cacheDir}/sandboxes/pool*; do echo backdoor >> "$d/src/app.txt"; done`,
    `cat ${f.home}/secret.txt > ${marker}`,
    `ls ${f.cacheDir}/mirrors >> ${marker}`,
  ];
  const body = hostile ? tries.map((t) => `(${t}) 2>/dev/null`).join('\n') : '';
  // What the untampered pipeline checks: the project's git answers from uh's `.git`.
  return `set +e\n${body}\ntest -d .git && git rev-parse HEAD >/dev/null 2>&1 && exit 0\nexit 1\n`;
}

beforeAll(async () => {
  redis = await startTestRedis('hcheck');
});

afterAll(async () => {
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

const FLEETS: Array<[Mode, Isolation]> = [
  ['inline', 'auto'],
  ['inline', 'off'],
  ['worker', 'auto'],
  ['worker', 'off'],
];

describe.each(FLEETS)('hostile check (%s, UH_ISOLATION=%s)', (mode, isolation) => {
  let f: Fleet;
  let marker: string;

  beforeAll(async () => {
    const repo = makeRepo({ 'README.md': '# demo\n', 'src/app.txt': 'v1\n', 'test.sh': 'exit 0\n' });
    const cacheDir = tempDir('uh-hcheck-cache-');
    const home = tempDir('uh-hcheck-home-');
    writeFileSync(join(home, 'secret.txt'), 'the user secret\n');
    const mark = tempDir('uh-hcheck-mark-');
    dirs.push(repo, cacheDir, home, mark);
    marker = join(mark, 'seen');
    f = { mode, isolation, repo, cacheDir, home, prefix: redis.prefix(`hcheck-${++counter}`), worker: null };
    if (mode === 'worker') {
      const state = tempDir('uh-hcheck-wstate-');
      dirs.push(state);
      f.worker = await startWorker(['--state-dir', state, '--runtime', 'command', '--concurrency', '1'], {
        cwd: repo,
        env: { ...env(f), UH_LOG_LEVEL: 'warn' },
      });
    }
    const first = await run(f, 'echo ok > src/ok.txt');
    expect(first.verdict).toBe('verified');
  }, 90_000);

  afterAll(async () => {
    await f?.worker?.stop('SIGKILL');
  });

  const attack = async (plant: string): Promise<void> => {
    const before = baseline(f);
    const script = checkScript(f, marker, isolation === 'auto');
    const agent = `cat > test.sh <<'UHEOF'\n${script}UHEOF\n${plant}`;
    const receipt = await run(f, agent);
    expect(receipt.changed_files.map((c: { path: string }) => c.path)).toEqual(['test.sh']);
    expect(receipt.scope.violations).toEqual([]);
    expect(receipt.verdict).toBe('verified');
    expect(existsSync(`/uh-hcheck-${process.pid}`)).toBe(false);
    if (isolation === 'auto') {
      expect(baseline(f)).toEqual(before);
      expect(existsSync(join(f.cacheDir, 'pwned'))).toBe(false);
      expect(existsSync(marker) ? readFileSync(marker, 'utf8') : '').toBe('');
    }
  };

  it('a gitfile `gitdir: /` becomes no bind: uh puts its .git back, the check writes nothing of the host', async () => {
    await attack('rm -rf .git; echo "gitdir: /" > .git');
  }, 60_000);

  it('a symlinked .git to the host root is replaced by uh before the checks', async () => {
    await attack('rm -rf .git; ln -s / .git');
  }, 60_000);

  it('commondir and alternates naming the cache and $HOME make neither readable to the check', async () => {
    await attack(
      `echo ${f.cacheDir} > .git/commondir; printf '%s\\n' ${f.cacheDir} ${f.home} >> .git/objects/info/alternates`,
    );
  }, 60_000);

  it('another .git anywhere in the tree is a nested_repository violation', async () => {
    const receipt = await run(f, 'mkdir -p src/deep/x && echo "gitdir: /" > src/deep/x/.git; echo y > src/y.txt');
    expect(receipt.scope.violations).toContainEqual({ path: 'src/deep/x/.git', reason: 'nested_repository' });
    expect(receipt.verdict).toBe('scope_violation');
  }, 60_000);
});
