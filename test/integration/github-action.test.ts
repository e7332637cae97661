/**
 * action.yml run as the Actions runner runs a composite action (test/support/action-runner.ts),
 * inline on the "runner" and against a worker on real Redis: outputs, step summary, ::error
 * annotations and the JUnit file (read back with junit2json) for each way a mission ends.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseJunit, type TestSuites } from 'junit2json';
import { runAction, type ActionResult } from '../support/action-runner.js';
import { generateKeyPair } from '../../src/operation/receipt-keys.js';
import { git, makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { FAKE_AGENT, runCli } from '../support/cli.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { waitGroupGone } from '../support/process-group.js';
import { forgeStoredArtifacts, storedArtifact } from '../support/stored-artifacts.js';

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
    // The fleet's artifact store, shared by every host of the test (the CI runner has a cache of its own).
    UH_ARTIFACT_STORE: `dir:${cacheDir}/artifacts`,
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
    const r = await action(mode, path, {}, (child, _index, id) => {
      if (id !== 'uh') return;
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

/** The variables a GitHub runner sets for one run of one workflow job (a pull_request event). */
function runnerEnv(run: { sha: string; runId: string; attempt?: string; prNumber?: number }): Record<string, string> {
  const event = join(tempDir('uh-action-event-'), 'event.json');
  writeFileSync(event, JSON.stringify({ pull_request: { number: run.prNumber ?? 7, head: { sha: run.sha } } }));
  return {
    ...env(),
    GITHUB_SHA: 'f'.repeat(40), // the merge commit of a pull_request run: not what uh runs on
    GITHUB_EVENT_NAME: 'pull_request',
    GITHUB_EVENT_PATH: event,
    GITHUB_RUN_ID: run.runId,
    GITHUB_RUN_ATTEMPT: run.attempt ?? '1',
    GITHUB_JOB: 'gate',
    GITHUB_REPOSITORY: basename(repo),
    GITHUB_SERVER_URL: `file://${dirname(repo)}`,
    RUNNER_TEMP: tempDir('uh-runner-temp-'),
  };
}

function push(text: string): string {
  writeFileSync(join(repo, 'README.md'), text);
  git(repo, 'commit', '-qam', `push: ${text.trim()}`);
  return git(repo, 'rev-parse', 'HEAD').trim();
}

async function gate(
  mode: Mode,
  mission: string,
  run: Parameters<typeof runnerEnv>[0],
  extra: Record<string, string> = {},
): Promise<ActionResult & { junit: string }> {
  const junit = join(tempDir('uh-junit-'), 'uh-junit.xml');
  writeFileSync(junit, '<stale report of the previous run/>');
  const inputs = { mission, junit, 'redis-url': mode === 'queue' ? redis.url : '', ...extra };
  const r = await runAction(inputs, { cwd: repo, env: runnerEnv(run) });
  return { ...r, junit };
}

describe.each(MODES)('action.yml, a PR gate on every push (%s)', (mode) => {
  it('two pushes of one mission file both run; a re-run is a new operation; the same run attaches', async () => {
    // In fleet mode the file names a local checkout, meaningless on a worker: the Action sends this workflow's repository.
    const url = mode === 'queue' ? './checkout' : repo;
    const { path } = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 42;\n'], {
      repository: { url, ref: 'main' },
      scope: { allowed_change_globs: ['src/**'] },
      verification: [PASSING_CHECK],
    });
    const first = push(`# push 1 ${mode}\n`);
    const a = await gate(mode, path, { sha: first, runId: '901' });
    expect(a.code, a.log).toBe(0);
    expect(a.outputs.operation_id).toBe(`m-test-${first.slice(0, 12)}-901-1`);
    const receiptA = JSON.parse(readFileSync(a.outputs.receipt_path as string, 'utf8'));
    expect(receiptA.repository.base_commit).toBe(first); // the PR head, not GITHUB_SHA (the merge commit)

    const second = push(`# push 2 ${mode}\n`);
    const b = await gate(mode, path, { sha: second, runId: '902' });
    expect(b.code, b.log).toBe(0); // not "already exists with another contract digest"
    expect(b.outputs.operation_id).toBe(`m-test-${second.slice(0, 12)}-902-1`);
    expect(JSON.parse(b.outputs.result_json as string)).toMatchObject({ status: 'completed', verdict: 'verified' });

    const rerun = await gate(mode, path, { sha: second, runId: '902', attempt: '2' });
    expect(rerun.code, rerun.log).toBe(0);
    expect(rerun.outputs.operation_id).toBe(`m-test-${second.slice(0, 12)}-902-2`);
    expect(rerun.log).not.toContain('existing operation (not run again)');

    const same = await gate(mode, path, { sha: second, runId: '902', attempt: '2' });
    expect(same.code, same.log).toBe(0);
    expect(same.outputs.operation_id).toBe(rerun.outputs.operation_id);
    expect(same.log).toContain(mode === 'queue' ? 'attached to' : 'existing operation (not run again)');
  }, 120_000);

  it.each([
    ['blocked: the agent program is missing', 'blocked', 'error', /::error title=uh blocked::/],
    ['timeout: the agent hangs past timeout_seconds', 'failed', 'failure', /::error title=uh failed \(timed out\)::/],
    [
      'crash: the agent exits 3',
      'failed',
      'error',
      /::error title=uh failed::.*command exited 3.*agent: cannot open the model socket/,
    ],
  ])(
    '%s: an annotation, the summary says why, a fresh JUnit %s',
    async (_name, status, kind, annotation) => {
      const agent =
        status === 'blocked'
          ? { runtime_config_overrides: { command: { argv: ['/nonexistent/uh-agent'] } } }
          : kind === 'failure'
            ? { timeout_seconds: 2, runtime_config_overrides: { command: { argv: hangArgv(), kill_grace_ms: 200 } } }
            : {};
      // The crash's reason is only on the agent's stderr: the annotation carries its last lines.
      const crash = ['exit', '3', 'agent: cannot open the model socket'];
      const { path } = writeMission(repo, crash, { verification: [PASSING_CHECK], ...agent });
      const r = await gate(mode, path, { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: `9${Date.now() % 1e6}` });
      expect(r.code, r.log).toBe(status === 'blocked' ? 3 : 1);
      expect(r.outputs.status).toBe(status);
      expect(r.log).toMatch(annotation);
      expect(r.summary).toContain('**why:**');
      const suite = (await junitOf(r.junit)).testsuite?.[0];
      expect(suite?.skipped ?? 0).toBe(0);
      const outcome = suite?.testcase?.find((c) => c.name === 'outcome');
      expect(kind === 'failure' ? outcome?.failure?.[0]?.message : outcome?.error?.[0]?.message).toMatch(
        new RegExp(`^${status}`),
      );
    },
    60_000,
  );

  it('a misspelt key: exit 2, an annotation and a JUnit error naming the field', async () => {
    const { path } = writeMission(repo, ['noop'], { verfication: [PASSING_CHECK] });
    const r = await gate(mode, path, { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '903' });
    expect(r.code, r.log).toBe(2);
    expect(r.outputs.status).toBe('invalid');
    expect(r.log).toMatch(/::error title=uh invalid mission::.*verfication/);
    expect(r.summary).toContain('verfication');
    const error = (await junitOf(r.junit)).testsuite?.[0]?.testcase?.[0]?.error?.[0];
    expect(error?.inner).toContain('verfication');
  }, 30_000);

  it('a conflict (another mission under one operation id): exit 2, both digests in the annotation and JUnit', async () => {
    const id = `conflict-${mode}-${process.pid}`;
    const run = { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '904' };
    const one = writeMission(repo, ['noop'], {});
    expect((await gate(mode, one.path, run, { 'operation-id': id })).code).toBe(0);
    const other = writeMission(repo, ['noop'], { title: 'Another mission' });
    const r = await gate(mode, other.path, run, { 'operation-id': id });
    expect(r.code, r.log).toBe(2);
    expect(r.outputs).toMatchObject({ status: 'invalid', operation_id: id });
    expect(r.log).toMatch(
      /::error title=uh conflict::.*another contract digest.*existing sha256:\w+…, submitted sha256:\w+…/,
    );
    const error = (await junitOf(r.junit)).testsuite?.[0]?.testcase?.[0]?.error?.[0];
    expect(error?.inner).toMatch(/existing sha256:\w+…, submitted sha256:\w+…/);
  }, 60_000);

  it('a scope violation: the JUnit names the violation, never "no verification checks"', async () => {
    const { path } = writeMission(repo, ['edit', 'secrets/keys.txt', 'oops\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [PASSING_CHECK, { ...PASSING_CHECK, name: 'lint' }],
    });
    const r = await gate(mode, path, { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '905' });
    expect(r.code, r.log).toBe(1);
    const text = readFileSync(r.junit, 'utf8');
    expect(text).not.toContain('no verification checks');
    expect(text).not.toContain('stale report');
    const scope = (await junitOf(r.junit)).testsuite?.[0]?.testcase?.find((c) => c.name === 'scope');
    expect(scope?.failure?.[0]?.message).toContain('scope violation: 1 file(s) out of scope');
  }, 60_000);
});

function hangArgv(): string[] {
  return [process.execPath, '-e', 'setInterval(() => {}, 1000)'];
}

describe('action.yml, a mission from inputs (prompt, runtime-config, checks, scope)', () => {
  it('prompt + checks + scope build a mission that runs and is verified', async () => {
    const run = { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '906' };
    const r = await gate('inline', '', run, {
      prompt: 'Make the answer 42.\nOnly src/ may change.',
      'mission-id': 'answer',
      runtime: 'command',
      'runtime-config': JSON.stringify({
        argv: [process.execPath, FAKE_AGENT, 'edit', 'src/app.js', 'export const answer = 42;\n'],
      }),
      checks: JSON.stringify([PASSING_CHECK.argv]),
      scope: 'src/**',
    });
    expect(r.code, r.log).toBe(0);
    expect(r.outputs.operation_id).toBe(`answer-${run.sha.slice(0, 12)}-906-1`);
    const receipt = JSON.parse(readFileSync(r.outputs.receipt_path as string, 'utf8'));
    expect(receipt).toMatchObject({ title: 'Make the answer 42.', verdict: 'verified' });
    expect(receipt.checks.map((c: { name: string }) => c.name)).toEqual(['check-1']);
  }, 60_000);

  it('a field the runtime does not take (model on command) is refused like a mission file, naming it', async () => {
    const run = { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '907' };
    const r = await gate('inline', '', run, {
      prompt: 'Anything',
      runtime: 'command',
      model: 'gpt-x',
      'runtime-config': JSON.stringify({ argv: [process.execPath, FAKE_AGENT, 'noop'] }),
    });
    expect(r.code, r.log).toBe(2);
    expect(r.outputs.status).toBe('invalid');
    expect(r.log).toMatch(/::error title=uh invalid mission::.*model/);
  }, 60_000);

  it('no mission and no prompt: exit 2 naming the input, a JUnit error', async () => {
    const r = await gate('inline', '', { sha: 'a'.repeat(40), runId: '908' });
    expect(r.code, r.log).toBe(2);
    expect(r.outputs.status).toBe('invalid');
    expect(r.log).toContain(
      '::error title=uh invalid input::input mission: give a mission file, or prompt / prompt-file',
    );
    expect((await junitOf(r.junit)).testsuite?.[0]?.errors).toBe(1);
    const missing = await gate(
      'inline',
      '',
      { sha: 'a'.repeat(40), runId: '909' },
      { 'prompt-file': 'no/such.md', runtime: 'command' },
    );
    expect(missing.code, missing.log).toBe(2);
    expect(missing.log).toContain('::error title=uh invalid input::input prompt-file: cannot read no/such.md (ENOENT)');
  }, 30_000);
});

interface Recorded {
  method: string;
  url: string;
  authorization: string | undefined;
  body: { body?: string } | null;
}

/** A scripted GitHub REST API on loopback: issue comments kept in memory, every request recorded. */
async function scriptedGithub(): Promise<{ url: string; requests: Recorded[]; close: () => Promise<void> }> {
  const { createServer } = await import('node:http');
  const requests: Recorded[] = [];
  const comments: { id: number; body: string; html_url: string }[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const body = text ? (JSON.parse(text) as { body?: string }) : null;
      requests.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, body });
      const reply = (code: number, value: unknown) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'GET' && path === '/repos/o/r/issues/7/comments') return reply(200, comments);
      if (req.method === 'POST' && path === '/repos/o/r/issues/7/comments') {
        const made = {
          id: 100 + comments.length,
          body: body?.body ?? '',
          html_url: 'https://github.test/o/r/pull/7#c',
        };
        comments.push(made);
        return reply(201, made);
      }
      const edit = /^\/repos\/o\/r\/issues\/comments\/(\d+)$/.exec(path ?? '');
      const found = edit && comments.find((c) => c.id === Number(edit[1]));
      if (req.method === 'PATCH' && found) return reply(200, Object.assign(found, { body: body?.body ?? '' }));
      reply(404, { message: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) };
}

describe('action.yml, pr-comment (against a scripted GitHub API)', () => {
  it('the first run creates one comment, the next updates it: one comment, POST then PATCH', async () => {
    const api = await scriptedGithub();
    try {
      const run = { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '910' };
      const failing = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 43;\n'], {
        scope: { allowed_change_globs: ['src/**'] },
        verification: [FAILING_CHECK],
      });
      const inputs = { 'pr-comment': 'true', 'github-token': 'ghs_job_token' };
      const runEnv = {
        ...runnerEnv(run),
        GITHUB_API_URL: api.url,
        GITHUB_REPOSITORY: 'o/r',
        GITHUB_SERVER_URL: 'https://github.test',
      };
      const first = await runAction({ mission: failing.path, ...inputs }, { cwd: repo, env: runEnv });
      expect(first.code, first.log).toBe(1);
      expect(first.outputs.comment_url).toBe('https://github.test/o/r/pull/7#c');
      const passing = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 42;\n'], {
        scope: { allowed_change_globs: ['src/**'] },
        verification: [PASSING_CHECK],
      });
      const rerun = { ...runEnv, GITHUB_RUN_ATTEMPT: '2' };
      const second = await runAction({ mission: passing.path, ...inputs }, { cwd: repo, env: rerun });
      expect(second.code, second.log).toBe(0);
      const writes = api.requests.filter((q) => q.method !== 'GET');
      expect(writes.map((q) => `${q.method} ${q.url}`)).toEqual([
        'POST /repos/o/r/issues/7/comments',
        'PATCH /repos/o/r/issues/comments/100',
      ]);
      expect(api.requests.every((q) => q.authorization === 'Bearer ghs_job_token')).toBe(true);
      const [created, updated] = writes.map((q) => q.body?.body ?? '');
      expect(created).toContain('<!-- uh-action-comment: gate -->');
      expect(created).toContain('❌ uh: completed · verification_failed');
      expect(created).toContain('AssertionError: expected 41 to be 42');
      expect(created).toContain('| unit-tests | ❌ exit 1 |');
      expect(created).toContain('- `src/app.js` modified');
      expect(created).toContain('(https://github.test/o/r/actions/runs/910)');
      expect(updated).toContain('✅ uh: completed · verified');
      expect(updated).toContain('<!-- uh-action-comment: gate -->');
    } finally {
      await api.close();
    }
  }, 90_000);
});

describe('action.yml, the fleet over HTTPS (uh api start; no Redis on the runner)', () => {
  const TOKEN = 'ci-token-0123456789abcdef0123456789';
  let api: import('node:child_process').ChildProcess;
  let apiUrl: string;

  beforeAll(async () => {
    const { spawn } = await import('node:child_process');
    const { UH_BIN } = await import('../support/cli.js');
    api = spawn(process.execPath, [UH_BIN, 'api', 'start', '--port', '0', '--state-dir', tempDir('uh-action-api-')], {
      cwd: repo,
      env: {
        ...process.env,
        ...env(),
        REDIS_URL: redis.url,
        UH_API_TOKEN: TOKEN,
        UH_ALLOW_LOCAL_REPOS: '1',
        UH_LOG_LEVEL: 'silent',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    apiUrl = await new Promise<string>((resolve, reject) => {
      let out = '';
      api.stdout?.on('data', (c) => {
        out += c;
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1] as string);
      });
      api.stderr?.on('data', (c) => (out += c));
      api.on('close', (code) => reject(new Error(`api exited ${code}: ${out}`)));
    });
  }, 30_000);

  afterAll(async () => {
    if (!api || api.exitCode !== null) return;
    const closed = new Promise((resolve) => api.once('close', resolve));
    api.kill('SIGTERM');
    await closed;
  });

  const viaApi = (mission: string, run: Parameters<typeof runnerEnv>[0], extra: Record<string, string> = {}) =>
    gate('inline', mission, run, { 'api-url': apiUrl, 'api-token': TOKEN, ...extra });

  it('submits through the API, waits on its events, collects a signed receipt; a forged receipt fails the step', async () => {
    const { path } = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 43;\n'], {
      repository: { url: '.', ref: 'main' },
      scope: { allowed_change_globs: ['src/**'] },
      verification: [FAILING_CHECK],
    });
    const run = { sha: push('# via the API\n'), runId: '920' };
    const r = await viaApi(path, run);
    expect(r.code, r.log).toBe(1);
    expect(r.outputs).toMatchObject({ status: 'completed', verdict: 'verification_failed' });
    expect(r.log).toContain('via http://127.0.0.1:');
    expect(r.log).toMatch(/✔ signature \(key /);
    expect(r.log).not.toContain(TOKEN);
    const collected = join(repo, '.harness-test', 'collected', r.outputs.operation_id as string);
    expect(r.outputs.receipt_path).toBe(join(collected, 'receipt.json'));
    expect(readFileSync(r.outputs.diff_path as string, 'utf8')).toContain('+export const answer = 43;');
    expect((await junitOf(r.junit)).testsuite?.[0]?.failures).toBe(1);

    // Someone with Redis rewrites the verdict: the step that attaches to the run refuses the receipt.
    const id = r.outputs.operation_id as string;
    const text = (await storedArtifact(redis.redis, env(), id, 'receipt')) as string;
    await forgeStoredArtifacts(redis.redis, env(), id, {
      receipt: text.replace('"verification_failed"', '"verified"'),
    });
    const forged = await viaApi(path, run);
    expect(forged.code, forged.log).toBe(6);
    expect(forged.outputs).toMatchObject({ status: 'untrusted', verdict: '' });
    expect(forged.log).toMatch(/::error title=uh untrusted::.*NOT trusted \(invalid\)/);
    expect((await junitOf(forged.junit)).testsuite?.[0]?.errors).toBe(1);
  }, 90_000);

  it('require-worker: no live worker serves the runtime: exit 3 at once, status blocked, reported', async () => {
    const { path } = writeMission(repo, ['noop'], { runtime: 'codex', runtime_config_overrides: {} });
    const r = await viaApi(
      path,
      { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '921' },
      { 'require-worker': 'true' },
    );
    expect(r.code, r.log).toBe(3);
    expect(r.outputs.status).toBe('blocked');
    expect(r.log).toMatch(/::error title=uh blocked::.*no live worker serves runtime codex/);
    expect((await junitOf(r.junit)).testsuite?.[0]?.errors).toBe(1);
  }, 30_000);
});

describe("action.yml, fleet output names the runner's copies", () => {
  it("a failed check's log is the collected copy, not a path on the worker", async () => {
    const { path } = writeMission(repo, ['edit', 'src/app.js', 'export const answer = 43;\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [FAILING_CHECK],
    });
    const r = await gate('queue', path, { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '930' });
    expect(r.code, r.log).toBe(1);
    const collected = join(repo, '.harness-test', 'collected', r.outputs.operation_id as string);
    expect(r.log).toContain(`(log: ${join(collected, 'check-unit-tests.log')})`);
    expect(r.outputs.artifacts_dir).toBe(collected);
  }, 60_000);
});

describe('action.yml, wait_timed_out (fleet mode, the operation outlives the step)', () => {
  it('exit 5, an annotation, the summary reason and a fresh JUnit error; the operation keeps running', async () => {
    const { path } = writeMission(repo, ['hang'], {});
    const r = await gate('queue', path, { sha: git(repo, 'rev-parse', 'HEAD').trim(), runId: '940' }, { timeout: '1' });
    try {
      expect(r.code, r.log).toBe(5);
      expect(r.outputs.status).toBe('wait_timed_out');
      expect(r.log).toMatch(/::error title=uh wait_timed_out::operation \S+ is still \w+ after 1 s/);
      expect(r.summary).toContain('wait_timed_out');
      expect(readFileSync(r.junit, 'utf8')).not.toContain('stale report');
      const error = (await junitOf(r.junit)).testsuite?.[0]?.testcase?.[0]?.error?.[0];
      expect(error?.message).toMatch(/^wait_timed_out: operation/);
    } finally {
      await runCli(['mission', 'cancel', r.outputs.operation_id as string], {
        cwd: repo,
        env: { ...env(), REDIS_URL: redis.url },
      });
    }
  }, 60_000);
});
