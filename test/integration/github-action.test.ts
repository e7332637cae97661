/**
 * action.yml run as the Actions runner runs a composite action (test/support/action-runner.ts),
 * inline on the "runner" and against a worker on real Redis: outputs, step summary, ::error
 * annotations and the JUnit file (read back with junit2json) for each way a mission ends.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseJunit, type TestSuites } from 'junit2json';
import { runAction, type ActionResult } from '../support/action-runner.js';
import { generateKeyPair } from '../../src/operation/receipt-keys.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { waitGroupGone } from '../support/process-group.js';

// This file's fake agents coordinate with the test through files outside their sandbox (pid, gate and
// counter files), which bubblewrap isolation hides by design; isolation itself is tested in test/security/.
process.env.UH_ISOLATION = 'off';

let repo: string;
let redis: TestRedis;
let worker: WorkerProcess;
let prefix: string;
const dirs: string[] = [];
const cacheDir = tempDir('uh-action-cache-');

const FAILING_CHECK = {
  name: 'unit-tests',
  argv: [
    process.execPath,
    '-e',
    "console.log('ran 3 tests'); console.error('AssertionError: expected 41 to be 42 (test/answer.test.js)'); process.exit(1)",
  ],
  timeout_seconds: 30,
};
const PASSING_CHECK = {
  name: 'unit-tests',
  argv: [process.execPath, '-e', "console.log('all 3 tests passed')"],
  timeout_seconds: 30,
};

beforeAll(async () => {
  repo = makeRepo({ 'README.md': '# demo\n', 'src/app.js': 'export const answer = 41;\n' });
  redis = await startTestRedis('action');
  prefix = redis.prefix('fleet');
  const state = tempDir('uh-action-worker-');
  dirs.push(state);
  worker = await startWorker(['--state-dir', state, '--runtime', 'command'], { cwd: repo, env: env() });
}, 30_000);

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await redis?.cleanup();
  dirs.forEach(removeDir);
  removeDir(cacheDir);
});

function env(): Record<string, string> {
  return {
    UH_REDIS_PREFIX: prefix,
    UH_CACHE_DIR: cacheDir,
    UH_HEARTBEAT_MS: '500',
    UH_STATE_DIR: join(repo, '.harness-test'),
    REDIS_URL: '',
  };
}

/** The process group of a live process (Linux /proc). */
function groupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

async function junitOf(path: string): Promise<TestSuites> {
  return (await parseJunit(readFileSync(path, 'utf8'))) as TestSuites;
}

const MODES = ['inline', 'queue'] as const;
type Mode = (typeof MODES)[number];

function action(
  mode: Mode,
  mission: string,
  extra: Record<string, string> = {},
  onStep?: Parameters<typeof runAction>[1]['onStep'],
): Promise<ActionResult> {
  const junit = join(tempDir('uh-junit-'), 'uh-junit.xml');
  return runAction(
    { mission, junit, 'redis-url': mode === 'queue' ? redis.url : '', ...extra },
    { cwd: repo, env: env(), ...(onStep ? { onStep } : {}) },
  ).then((r) => ({ ...r, junit }) as ActionResult & { junit: string });
}

describe.each(MODES)('action.yml, %s', (mode) => {
  it('completed: outputs, summary, JUnit all passing', async () => {
    const { path, operationId } = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 42;\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [PASSING_CHECK],
    });
    const r = (await action(mode, path)) as ActionResult & { junit: string };
    expect(r.code, r.log).toBe(0);
    expect(r.outputs).toMatchObject({ status: 'completed', verdict: 'verified', operation_id: operationId });
    expect(existsSync(r.outputs.receipt_path as string)).toBe(true);
    expect(readFileSync(r.outputs.diff_path as string, 'utf8')).toContain('+export const answer = 42;');
    expect(r.summary).toContain('completed · verified');
    expect(r.summary).toContain('`src/app.js` modified');
    expect(r.summary).toMatch(/\| unit-tests \| ✅ passed \|/);
    const suites = await junitOf(r.junit);
    const cases = suites.testsuite?.[0]?.testcase ?? [];
    expect(cases.map((c) => c.name)).toEqual(['scope', 'unit-tests']);
    expect(cases.every((c) => !c.failure)).toBe(true);
  }, 60_000);

  it('verification_failed: the failing test output reaches the summary, JUnit and an annotation', async () => {
    const { path } = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 43;\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [FAILING_CHECK],
    });
    const r = (await action(mode, path)) as ActionResult & { junit: string };
    expect(r.code, r.log).toBe(1);
    expect(r.outputs).toMatchObject({ status: 'completed', verdict: 'verification_failed' });
    expect(r.summary).toContain('AssertionError: expected 41 to be 42');
    expect(r.log).toMatch(/::error title=uh check unit-tests failed::.*AssertionError: expected 41 to be 42/);
    expect(r.log).toContain('| AssertionError: expected 41 to be 42'); // the CLI prints the failing check's tail
    const suites = await junitOf(r.junit);
    const failed = suites.testsuite?.[0]?.testcase?.find((c) => c.name === 'unit-tests');
    expect(failed?.failure?.[0]?.inner).toContain('AssertionError: expected 41 to be 42 (test/answer.test.js)');
    expect(suites.testsuite?.[0]?.failures).toBe(1);
  }, 60_000);

  it('scope_violation: an annotation names the file', async () => {
    const { path } = writeMission(repo, ['edit', 'secrets/keys.txt', 'oops\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [PASSING_CHECK],
    });
    const r = (await action(mode, path)) as ActionResult & { junit: string };
    expect(r.code, r.log).toBe(1);
    expect(r.outputs).toMatchObject({ status: 'completed', verdict: 'scope_violation' });
    expect(r.log).toMatch(/^::error file=secrets\/keys\.txt,title=uh scope violation::/m);
    expect(r.summary).toContain('`secrets/keys.txt` added ⚠️ **out of scope**');
    const scope = (await junitOf(r.junit)).testsuite?.[0]?.testcase?.find((c) => c.name === 'scope');
    expect(scope?.failure?.[0]?.inner).toContain('secrets/keys.txt');
  }, 60_000);

  it('cancelled: SIGTERM to the step (a cancelled job) ends the operation as cancelled, exit 4', async () => {
    const pidFile = join(tempDir('uh-action-pid-'), 'grandchild.pid');
    const { path, operationId } = writeMission(repo, ['hang', pidFile], {
      scope: { allowed_change_globs: ['src/**'] },
    });
    let pgid = 0;
    const r = await action(mode, path, {}, (child, index) => {
      if (index !== 1) return;
      const poll = setInterval(() => {
        if (existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '') {
          clearInterval(poll);
          pgid = groupOf(Number(readFileSync(pidFile, 'utf8')));
          child.kill('SIGTERM');
        }
      }, 50);
      child.on('close', () => clearInterval(poll));
    });
    expect(r.code, r.log).toBe(4);
    expect(r.outputs).toMatchObject({ status: 'cancelled', operation_id: operationId });
    expect(r.summary).toMatch(/cancelled/);
    // The agent's grandchild lived in the runtime's process group: the cancel killed the group.
    expect(pgid).toBeGreaterThan(0);
    expect(await waitGroupGone(pgid)).toEqual([]);
  }, 60_000);

  it('invalid mission: exit 2, status invalid, an annotation', async () => {
    const { path } = writeMission(repo, ['noop'], { timeout_seconds: -1 });
    const r = await action(mode, path);
    expect(r.code, r.log).toBe(2);
    expect(r.outputs.status).toBe('invalid');
    expect(r.log).toContain('timeout_seconds');
    expect(r.log).toContain('::error title=uh invalid mission::');
    expect(r.summary).toContain('invalid mission');
  }, 30_000);
});

describe('action.yml, promotion', () => {
  it('a mission with promotion: branch gives promoted_branch, a branch of the repository at the verified change', async () => {
    const { path, operationId } = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 43;\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [PASSING_CHECK],
      promotion: 'branch',
    });
    const r = await action('inline', path);
    expect(r.code, r.log).toBe(0);
    expect(r.outputs.promoted_branch).toBe(`uh/${operationId}`);
    const shown = execFileSync('git', ['show', `uh/${operationId}:src/app.js`], { cwd: repo, encoding: 'utf8' });
    expect(shown).toBe('export const answer = 43;\n');
  }, 60_000);

  it('no promotion asked: promoted_branch is empty', async () => {
    const { path } = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 44;\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [PASSING_CHECK],
    });
    const r = await action('inline', path);
    expect(r.code, r.log).toBe(0);
    expect(r.outputs.promoted_branch).toBe('');
  }, 60_000);
});

describe('action.yml, receipt-public-key (a CI runner holding only the fleet public key)', () => {
  it('the fleet key passes; another key fails the step with exit 6 and status untrusted; none here is exit 6 too', async () => {
    const { path } = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 45;\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [PASSING_CHECK],
    });
    const fleetPub = readFileSync(join(cacheDir, 'receipt-signing.pub'), 'utf8'); // made by the worker at start
    const ci = () => ({ ...env(), UH_CACHE_DIR: tempDir('uh-action-ci-') }); // no signing key of its own
    const run = (key: string) =>
      runAction({ mission: path, 'redis-url': redis.url, 'receipt-public-key': key }, { cwd: repo, env: ci() });
    const good = await run(fleetPub);
    expect(good.code, good.log).toBe(0);
    expect(good.outputs).toMatchObject({ status: 'completed', verdict: 'verified' });
    const other = generateKeyPair(join(tempDir('uh-action-other-'), 'k'));
    const bad = await run(readFileSync(other.publicFile, 'utf8'));
    expect(bad.code, bad.log).toBe(6);
    expect(bad.outputs).toMatchObject({ status: 'untrusted', verdict: '' });
    expect(bad.log).toContain('NOT trusted (unknown_key)');
    expect((await run('')).code).toBe(6);
  }, 60_000);
});
