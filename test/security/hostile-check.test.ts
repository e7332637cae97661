/**
 * A hostile check (issue 34): the agent rewrites the project's test script, which is in scope,
 * and plants a `.git` of its own (a gitfile `gitdir: /`, or a git dir whose `commondir` and
 * `objects/info/alternates` name the cache and the real $HOME). uh computes every phase's binds
 * from its own records and puts its `.git` back before the diff and the checks, so the check
 * (the agent's script, run by uh) writes nothing of the host's and reads neither the cache nor
 * $HOME; the verdict is the untampered pipeline's (verified: only the script changed).
 *
 * Inline and through a worker, isolated and with UH_ISOLATION=off, as root and as the deployment's
 * user `uh` (test/support/fleet.ts; not root: as the current user only). Unisolated, the check can
 * write anything (nothing stops a process uh runs unisolated), so there the attack asserts the
 * uh-side defence only: the check runs on uh's `.git`, a real directory, whatever the agent left.
 * Another `.git` anywhere in the tree is a nested_repository violation.
 */
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  firstMission,
  fleetTable,
  runScript,
  signingKeys,
  startFleet,
  stopFleet,
  type Fleet,
} from '../support/fleet.js';
import { checkoutFingerprint } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { treeFingerprint } from './isolation-helpers.js';

let redis: TestRedis;

/** The agent rewrites test.sh (in scope) and plants what it likes; the check runs that script. */
const hostileScope = {
  mission_id: 'm-hostile-check',
  scope: { allowed_change_globs: ['src/**', 'test.sh'] },
  verification: [{ name: 'tests', argv: ['sh', 'test.sh'], timeout_seconds: 30 }],
};
const run = (f: Fleet, script: string): Promise<any> => runScript(f, script, hostileScope);

/** Everything the check must not touch: the user's checkout, $HOME, the cache (its pool and mirrors). */
function baseline(f: Fleet): Record<string, string> {
  return {
    checkout: checkoutFingerprint(f.repo),
    home: treeFingerprint(f.home),
    mirrors: treeFingerprint(join(f.cacheDir, 'mirrors')),
    pool: poolFingerprint(f),
    keys: JSON.stringify(signingKeys(f)),
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
});

describe.each(fleetTable())('hostile check (%s, UH_ISOLATION=%s, as %s)', (mode, isolation, user) => {
  let f: Fleet;
  let marker: string;

  beforeAll(async () => {
    f = await startFleet({
      mode,
      isolation,
      user,
      redis,
      tag: 'hcheck',
      files: { 'README.md': '# demo\n', 'src/app.txt': 'v1\n', 'test.sh': 'exit 0\n' },
      prepare: (fleet) => writeFileSync(join(fleet.home, 'secret.txt'), 'the user secret\n'),
    });
    marker = join(f.tempDir('uh-hcheck-mark-'), 'seen');
    await firstMission(f, hostileScope);
  }, 90_000);

  afterAll(async () => {
    await stopFleet(f);
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
