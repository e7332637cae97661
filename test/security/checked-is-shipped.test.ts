/**
 * What is checked is what ships (issue 34, "One tree, checked and shipped"): the checks see
 * exactly the tree the diff shows, reviewers read and a promotion commits. Each attack is one a
 * hostile agent would try to make broken or hidden code pass:
 * - an ignored sourceless `helper.pyc` that the changed code imports: removed before the checks,
 *   so the verdict is the one the promoted branch would get (verification_failed), unless the
 *   mission keeps it (`sandbox.keep_ignored`), and then it is in the diff; likewise an empty
 *   directory (git records none) imported as a namespace package;
 * - a `.gitattributes` with `working-tree-encoding`, `filter`/`text eol`, or `-diff`: uh stages
 *   and prints with no attribute at all, so the blob is the worktree's bytes (its id in the patch
 *   is the hash of what the check read) and an injected line shows as a text line;
 * - a path past the depth/length bounds (deeper than PATH_MAX), and a name git refuses: scope
 *   violations by name, never silently missing from the diff; gc removes the deep sandbox and
 *   counts its bytes.
 * Fleets (test/support/fleet.ts): inline and through a worker, isolated and with UH_ISOLATION=off,
 * as root; as the deployment's user `uh` on the deployment's configuration only (bwrap, inline and
 * through a worker). Measured on the 2-core machine: the four fleets as root took 88 s, each fleet
 * 20 s or more (eight missions and a gc), so every fleet doubled would add some 60-90 s to a suite
 * that must stay under 15 min; the six here took 93 s. Not root: as the current user only.
 * After every attack the user's checkout, $HOME, the cache's mirrors and the signing keys are as
 * before it, every pooled sandbox is pristine (the base tree) and, isolated, the host's root unwritten.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import {
  commandMission,
  fleetEnv,
  fleetTable,
  asDeployed,
  poolPristine,
  runMission,
  signingKeys,
  startFleet,
  stopFleet,
  type Fleet,
} from '../support/fleet.js';
import { checkoutFingerprint } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { treeFingerprint } from './isolation-helpers.js';

let redis: TestRedis;

const TEST_SH = 'set -e\npython3 -B -c "import app; assert app.add(2, 2) == 4"\n! grep -q BACKDOOR src/app.txt\n';

interface Outcome {
  receipt: any;
  patch: string;
  /** The state dir the operation was recorded in (the CLI's inline, the worker's otherwise). */
  stateDir: string;
}

function baseline(f: Fleet): Record<string, string> {
  return {
    checkout: checkoutFingerprint(f.repo),
    home: treeFingerprint(f.home),
    mirrors: treeFingerprint(join(f.cacheDir, 'mirrors')),
    keys: JSON.stringify(signingKeys(f)),
  };
}

/** Run the agent `script` (the fleet's first mission creates the mirror, the pool and the keys). */
async function runOnce(f: Fleet, script: string, sandbox: Record<string, unknown> = {}): Promise<Outcome> {
  const mission = commandMission(f, script, {
    mission_id: 'm-shipped',
    title: 'checked is shipped',
    objective: 'make the checks see something else than what ships',
    sandbox,
    scope: { allowed_change_globs: ['**'] },
    verification: [{ name: 'tests', argv: ['sh', 'test.sh'], timeout_seconds: 30 }],
  });
  const { receipt, operationDir } = await runMission(f, mission);
  const patchPath = join(operationDir, 'diff.patch');
  const patch = existsSync(patchPath) ? readFileSync(patchPath, 'latin1') : '';
  return { receipt, patch, stateDir: dirname(dirname(operationDir)) };
}

/** An attack: `runOnce`; the checkout, $HOME, mirrors and keys are as before it, the pool pristine. */
async function run(f: Fleet, script: string, sandbox: Record<string, unknown> = {}): Promise<Outcome> {
  const before = baseline(f);
  // Isolated, the agent also tries the host's root (unisolated nothing would stop it: not asserted).
  const host = `/uh-shipped-${process.pid}`;
  const tries = f.isolation === 'auto' ? `(echo pwned > ${host}) 2>/dev/null; ` : '';
  const outcome = await runOnce(f, `${tries}${script}`, sandbox);
  expect(existsSync(host)).toBe(false);
  expect(baseline(f)).toEqual(before);
  expect(poolPristine(f)).toBe(true);
  return outcome;
}

/** The blob id git gives `bytes` (SHA-1 repositories). */
function blobId(bytes: Buffer): string {
  return createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${bytes.length}\0`), bytes]))
    .digest('hex');
}

/** The new blob id the patch records for `path` (`--full-index`). */
function patchBlob(patch: string, path: string): string | null {
  const at = patch.indexOf(`diff --git a/${path} b/${path}\n`);
  if (at < 0) return null;
  return /\nindex [0-9a-f]+\.\.([0-9a-f]{40})/.exec(patch.slice(at))?.[1] ?? null;
}

const paths = (receipt: any): string[] => receipt.changed_files.map((c: { path: string }) => c.path);

beforeAll(async () => {
  redis = await startTestRedis('shipped');
});

afterAll(async () => {
  await redis?.cleanup();
});

/** Every fleet as root (or the current user); as `uh`, isolated only (the deployment's configuration). */
const FLEETS = fleetTable().filter(asDeployed);

describe.each(FLEETS)('what is checked is what ships (%s, UH_ISOLATION=%s, as %s)', (mode, isolation, user) => {
  let f: Fleet;

  beforeAll(async () => {
    f = await startFleet({
      mode,
      isolation,
      user,
      redis,
      tag: 'shipped',
      env: { UH_SANDBOX_KEEP_HOURS: '0' },
      files: {
        'README.md': '# demo\n',
        '.gitignore': '__pycache__/\n*.pyc\nbuild/\n',
        'app.py': 'def add(a, b):\n    return a + b\n',
        'src/app.txt': 'v1\n',
        'test.sh': TEST_SH,
      },
    });
    const first = await runOnce(f, 'echo v2 > src/app.txt');
    expect(first.receipt.verdict).toBe('verified');
    expect(first.receipt.isolation?.kind).toBe(isolation === 'auto' ? 'bwrap' : 'none');
  }, 90_000);

  afterAll(async () => {
    await stopFleet(f);
  });

  // A sourceless module: `import helper` finds helper.pyc beside app.py; the promoted branch has none.
  const PLANT_PYC = [
    `printf 'def add(a, b):\\n    return a + b\\n' > helper.py`,
    "python3 -c \"import py_compile; py_compile.compile('helper.py', cfile='helper.pyc')\"",
    'rm -f helper.py',
    `printf 'from helper import add\\n' > app.py`,
    'mkdir -p build && echo junk > build/out.o',
  ].join(' && ');

  it('an ignored helper.pyc the changed code imports is removed before the checks: verification_failed', async () => {
    const { receipt } = await run(f, PLANT_PYC);
    expect(paths(receipt)).toEqual(['app.py']);
    expect(receipt.scope.violations).toEqual([]);
    expect(receipt.verdict).toBe('verification_failed');
  }, 60_000);

  it('sandbox.keep_ignored keeps it, and then it is in the diff (and the checks pass on what ships)', async () => {
    const { receipt, patch } = await run(f, PLANT_PYC, { keep_ignored: ['*.pyc'] });
    expect(paths(receipt)).toEqual(['app.py', 'helper.pyc']);
    expect(patch).toContain('diff --git a/helper.pyc b/helper.pyc');
    expect(receipt.verdict).toBe('verified');
  }, 60_000);

  it('an empty directory the changed code imports (a namespace package) is removed: verification_failed', async () => {
    const { receipt } = await run(
      f,
      `mkdir -p nspkg/sub && printf 'import nspkg\\ndef add(a, b):\\n    return a + b\\n' > app.py`,
    );
    expect(paths(receipt)).toEqual(['app.py']);
    expect(receipt.verdict).toBe('verification_failed');
  }, 60_000);

  it('working-tree-encoding: the blob is the bytes the check read, not a re-encoding of them', async () => {
    // The check greps the UTF-16 file (no ASCII BACKDOOR in it); git would have committed UTF-8 with one.
    const utf16 = Buffer.from('\ufeffv2 BACKDOOR\n', 'utf16le');
    const script = `printf '*.txt working-tree-encoding=UTF-16\\n' > .gitattributes && printf '${[...utf16].map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('')}' > src/app.txt`;
    const { receipt, patch } = await run(f, script);
    expect(paths(receipt)).toEqual(['.gitattributes', 'src/app.txt']);
    expect(patchBlob(patch, 'src/app.txt')).toBe(blobId(utf16));
    expect(receipt.verdict).toBe('verified');
  }, 60_000);

  it('filter and eol attributes (and a filter the agent configured in its own .git) change no byte', async () => {
    const crlf = Buffer.from('v2\r\nsafe\r\n');
    const script = [
      `printf '*.txt filter=x text eol=crlf ident\\n[attr]evil filter=x\\n*.py evil\\n' > .gitattributes`,
      `git config filter.x.clean 'sed s/safe/BACKDOOR/' 2>/dev/null; git config filter.x.required true 2>/dev/null`,
      `printf 'v2\\r\\nsafe\\r\\n' > src/app.txt`,
    ].join('; ');
    const { receipt, patch } = await run(f, script);
    expect(paths(receipt)).toEqual(['.gitattributes', 'src/app.txt']);
    expect(patchBlob(patch, 'src/app.txt')).toBe(blobId(crlf));
    expect(patch).not.toContain('BACKDOOR');
    expect(receipt.verdict).toBe('verified');
  }, 60_000);

  it('-diff: an injected line shows as a text line in the patch, never as a binary patch', async () => {
    const script = `printf '*.txt -diff\\n*.py binary\\n' > .gitattributes && printf 'v1\\ninjected line\\n' > src/app.txt`;
    const { receipt, patch } = await run(f, script);
    expect(paths(receipt)).toEqual(['.gitattributes', 'src/app.txt']);
    expect(patch).toContain('\n+injected line\n');
    expect(patch).not.toContain('GIT binary patch');
    expect(receipt.verdict).toBe('verified');
  }, 60_000);

  it('a path deeper than PATH_MAX is a path_too_long violation by name; gc removes the sandbox and counts it', async () => {
    const name = 'd'.repeat(200);
    // 30 levels of 200 bytes: about 6 KB, past PATH_MAX; relative mkdir/chdir keep every call short.
    const deep = `python3 -c "import os; os.makedirs('src', exist_ok=True); os.chdir('src'); [(os.mkdir('${name}'), os.chdir('${name}')) for _ in range(30)]; open('deep.txt', 'w').write('x' * 300000)"`;
    const { receipt, stateDir } = await run(f, `${deep} && echo v2 > src/app.txt`);
    const first = `src/${Array.from({ length: 6 }, () => name).join('/')}`;
    expect(receipt.scope.violations).toContainEqual({ path: first, reason: 'path_too_long' });
    expect(receipt.verdict).toBe('scope_violation');
    const sandboxes = join(f.cacheDir, 'sandboxes');
    const gc = await runCli(['gc', '--json', '--state-dir', stateDir], { cwd: f.repo, env: fleetEnv(f), as: f.as });
    const out = JSON.parse(gc.stdout);
    const item = out.items.find((i: { operation_id?: string }) => i.operation_id === receipt.operation_id);
    expect(item).toBeDefined();
    expect(item.bytes).toBeGreaterThanOrEqual(300_000);
    expect(existsSync(item.path)).toBe(false);
    expect(readdirSync(sandboxes).some((n) => item.path.endsWith(`/${n}`))).toBe(false);
  }, 90_000);

  it('a name git refuses is a name_refused_by_git violation, and the rest of the change is still in the diff', async () => {
    const { receipt } = await run(
      f,
      'mkdir -p src/.GIT src/git~1 && echo x > src/.GIT/config && echo y > src/git~1/x && echo v2 > src/app.txt',
    );
    expect(receipt.scope.violations).toEqual(
      expect.arrayContaining([
        { path: 'src/.GIT', reason: 'name_refused_by_git' },
        { path: 'src/git~1', reason: 'name_refused_by_git' },
      ]),
    );
    expect(paths(receipt)).toContain('src/app.txt');
    expect(receipt.verdict).toBe('scope_violation');
  }, 60_000);
});
