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
 * Inline and through a worker, isolated and with UH_ISOLATION=off; every time the user's
 * checkout, $HOME and the cache's mirrors are untouched.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTree } from '../../src/shared/fs/deep-tree.js';
import { runCli } from '../support/cli.js';
import { checkoutFingerprint, makeRepo } from '../support/git-repo.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { tempDir } from '../support/temp.js';
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
  /** Where operation dirs (diff.patch) are written: the CLI's state dir inline, the worker's otherwise. */
  stateDir: string;
  prefix: string;
  worker: WorkerProcess | null;
}

const env = (f: Fleet): Record<string, string> => ({
  UH_CACHE_DIR: f.cacheDir,
  UH_ISOLATION: f.isolation,
  UH_SANDBOX_KEEP_HOURS: '0',
  HOME: f.home,
  XDG_CONFIG_HOME: join(f.home, '.config'),
  REDIS_URL: redis.url,
  UH_REDIS_PREFIX: f.prefix,
});

const TEST_SH = 'set -e\npython3 -B -c "import app; assert app.add(2, 2) == 4"\n! grep -q BACKDOOR src/app.txt\n';

interface Outcome {
  receipt: any;
  patch: string;
}

async function run(f: Fleet, script: string, sandbox: Record<string, unknown> = {}): Promise<Outcome> {
  const operationId = `op-shipped-${process.pid}-${++counter}`;
  const body = {
    schema_version: 'uh.mission.v0',
    mission_id: 'm-shipped',
    operation_id: operationId,
    title: 'checked is shipped',
    objective: 'make the checks see something else than what ships',
    repository: { url: f.repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['/bin/sh', '-c', script], kill_grace_ms: 500 } },
    sandbox,
    scope: { allowed_change_globs: ['**'] },
    verification: [{ name: 'tests', argv: ['sh', 'test.sh'], timeout_seconds: 30 }],
    timeout_seconds: 60,
  };
  const dir = tempDir('uh-shipped-mission-');
  dirs.push(dir);
  writeFileSync(join(dir, 'mission.yaml'), stringify(body));
  const verb = f.mode === 'inline' ? ['run'] : ['submit', '--wait'];
  const state = f.mode === 'inline' ? f.stateDir : tempDir('uh-shipped-cstate-');
  const args = ['mission', ...verb, join(dir, 'mission.yaml'), '--json', '--state-dir', state];
  const result = await runCli(args, { cwd: f.repo, env: env(f) });
  let receipt: any;
  try {
    const out = JSON.parse(result.stdout);
    receipt = out.receipt ?? out;
  } catch {
    throw new Error(`uh exited ${result.code}: ${result.stderr}\n${result.stdout}`);
  }
  const patchPath = join(f.stateDir, 'operations', operationId, 'diff.patch');
  return { receipt, patch: existsSync(patchPath) ? readFileSync(patchPath, 'latin1') : '' };
}

function baseline(f: Fleet): Record<string, string> {
  return {
    checkout: checkoutFingerprint(f.repo),
    home: treeFingerprint(f.home),
    mirrors: treeFingerprint(join(f.cacheDir, 'mirrors')),
  };
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
  for (const dir of dirs) removeTree(dir);
});

const FLEETS: Array<[Mode, Isolation]> = [
  ['inline', 'auto'],
  ['inline', 'off'],
  ['worker', 'auto'],
  ['worker', 'off'],
];

describe.each(FLEETS)('what is checked is what ships (%s, UH_ISOLATION=%s)', (mode, isolation) => {
  let f: Fleet;
  let before: Record<string, string>;

  beforeAll(async () => {
    const repo = makeRepo({
      'README.md': '# demo\n',
      '.gitignore': '__pycache__/\n*.pyc\nbuild/\n',
      'app.py': 'def add(a, b):\n    return a + b\n',
      'src/app.txt': 'v1\n',
      'test.sh': TEST_SH,
    });
    const cacheDir = tempDir('uh-shipped-cache-');
    const home = tempDir('uh-shipped-home-');
    const stateDir = tempDir('uh-shipped-state-');
    dirs.push(repo, cacheDir, home, stateDir);
    f = { mode, isolation, repo, cacheDir, home, stateDir, prefix: redis.prefix(`shipped-${++counter}`), worker: null };
    if (mode === 'worker') {
      f.worker = await startWorker(['--state-dir', stateDir, '--runtime', 'command', '--concurrency', '1'], {
        cwd: repo,
        env: { ...env(f), UH_LOG_LEVEL: 'warn' },
      });
    }
    const first = await run(f, 'echo v2 > src/app.txt');
    expect(first.receipt.verdict).toBe('verified');
    before = baseline(f);
  }, 90_000);

  afterAll(async () => {
    await f?.worker?.stop('SIGKILL');
    expect(baseline(f)).toEqual(before);
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
    const { receipt } = await run(f, `${deep} && echo v2 > src/app.txt`);
    const first = `src/${Array.from({ length: 6 }, () => name).join('/')}`;
    expect(receipt.scope.violations).toContainEqual({ path: first, reason: 'path_too_long' });
    expect(receipt.verdict).toBe('scope_violation');
    const sandboxes = join(f.cacheDir, 'sandboxes');
    const gc = await runCli(['gc', '--json', '--state-dir', f.stateDir], { cwd: f.repo, env: env(f) });
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
