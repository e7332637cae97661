/**
 * The CLI as a CI job uses it: SIGINT to `submit --wait` cancels the operation (or detaches),
 * check output travels through Redis to `collect`, and the small things a pipeline trips on
 * (✘ marks, EPIPE, group help, --state, cancel --reason, a clean `git status`, own-id manifests).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseJunit, type TestSuites } from 'junit2json';
import { runCli, UH_BIN, type CliResult } from '../support/cli.js';
import { git, makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitGroupGone } from '../support/process-group.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { removeDir, tempDir } from '../support/temp.js';
import { startWorker, type WorkerProcess } from '../support/worker-process.js';
import { storedArtifact } from '../support/stored-artifacts.js';

// This file's fake agents coordinate with the test through files outside their sandbox (pid, gate and
// counter files), which bubblewrap isolation hides by design; isolation itself is tested in test/security/.
process.env.UH_ISOLATION = 'off';

let repo: string;
let redis: TestRedis;
let worker: WorkerProcess;
let prefix: string;
const cacheDir = tempDir('uh-ci-cache-');
const dirs: string[] = [cacheDir];

beforeAll(async () => {
  repo = makeRepo({ 'README.md': '# demo\n', 'src/app.js': 'export const answer = 41;\n' });
  redis = await startTestRedis('ci-cli');
  prefix = redis.prefix('fleet');
  const state = tempDir('uh-ci-worker-');
  dirs.push(state);
  // The worker's secrets: a queued mission names them ({secret_ref}), never carries their values.
  const secrets = tempDir('uh-ci-secrets-');
  dirs.push(secrets);
  writeFileSync(join(secrets, 'deploy-token'), 'hunter2-very-secret');
  worker = await startWorker(['--state-dir', state, '--runtime', 'command'], {
    cwd: repo,
    env: env({ UH_SECRETS_DIR: secrets }),
  });
}, 30_000);

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await redis?.cleanup();
  dirs.forEach(removeDir);
});

function env(extra: Record<string, string> = {}): Record<string, string> {
  return { REDIS_URL: redis.url, UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir, UH_HEARTBEAT_MS: '500', ...extra };
}

async function waitFor(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

function groupOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/** `uh mission submit --wait` on a hanging agent; resolves once its runtime's grandchild runs. */
async function submitHanging(args: string[] = []) {
  const pidFile = join(tempDir('uh-ci-pid-'), 'grandchild.pid');
  const { path, operationId } = writeMission(repo, ['hang', pidFile]);
  const child = spawn(process.execPath, [UH_BIN, 'mission', 'submit', path, '--wait', ...args], {
    cwd: repo,
    env: { ...process.env, UH_LOG_LEVEL: 'silent', ...env() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise<CliResult>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr, peakRssKb: 0 })),
  );
  expect(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '', 20_000)).toBe(true);
  return { child, exited, operationId, pgid: groupOf(Number(readFileSync(pidFile, 'utf8'))) };
}

describe('submit --wait on abort', () => {
  it('SIGINT cancels the operation: it settles cancelled, the runtime group is gone, the id is printed, exit 4', async () => {
    const run = await submitHanging();
    run.child.kill('SIGINT');
    const r = await run.exited;
    expect(r.code, r.stderr).toBe(4);
    expect(r.stdout).toContain(run.operationId);
    expect(await redis.redis.hget(`{${prefix}}:op:${run.operationId}`, 'status')).toBe('cancelled');
    expect(await waitGroupGone(run.pgid)).toEqual([]);
    const status = await runCli(['mission', 'status', run.operationId, '--redis', redis.url], {
      cwd: repo,
      env: env(),
    });
    expect(status.code).toBe(4);
    expect(status.stdout).toContain('SIGINT to uh mission submit --wait');
  }, 60_000);

  it('--detach-on-abort leaves it running; cancel --reason is then recorded in the record, an event and the receipt', async () => {
    const run = await submitHanging(['--detach-on-abort']);
    run.child.kill('SIGTERM');
    const r = await run.exited;
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`${run.operationId} keeps running`);
    expect(await redis.redis.hget(`{${prefix}}:op:${run.operationId}`, 'state')).toBe('running');
    const cancel = await runCli(
      ['mission', 'cancel', run.operationId, '--reason', 'superseded by PR #12', '--wait', '--json'],
      { cwd: repo, env: env() },
    );
    expect(cancel.code).toBe(4);
    expect(await redis.redis.hget(`{${prefix}}:op:${run.operationId}`, 'cancel_requested')).toBe(
      'superseded by PR #12',
    );
    const events = await redis.redis.xrange(`{${prefix}}:op:${run.operationId}:events`, '-', '+');
    expect(
      events
        .filter(([, f]) => f.includes('event'))
        .map(([, f]) => JSON.parse(f[f.indexOf('event') + 1] as string))
        .find((e) => e.type === 'operation.cancel_requested')?.data,
    ).toEqual({ reason: 'superseded by PR #12' });
    const receipt = JSON.parse(
      (await storedArtifact(
        redis.redis,
        { UH_REDIS_PREFIX: prefix, UH_CACHE_DIR: cacheDir },
        run.operationId,
        'receipt',
      )) as string,
    );
    expect(receipt.outcome.message).toContain('superseded by PR #12');
    expect(await waitGroupGone(run.pgid)).toEqual([]);
  }, 60_000);
});

describe('check output travels', () => {
  it('the receipt holds head and tail (secrets scrubbed), collect brings the check log back, --junit on collect', async () => {
    const check = {
      name: 'unit-tests',
      argv: [
        process.execPath,
        '-e',
        "console.log('HEAD-LINE token=' + process.env.DEPLOY_TOKEN); for (let i = 0; i < 2000; i++) console.log('line ' + i); console.error('LAST-LINE failing'); process.exitCode = 3",
      ],
      timeout_seconds: 30,
    };
    const { path, operationId } = writeMission(repo, ['edit', 'src/app.js', 'x\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [check],
      sandbox: { env: { DEPLOY_TOKEN: { secret_ref: 'deploy-token' } } },
    });
    const state = tempDir('uh-ci-producer-');
    dirs.push(state);
    const waited = await runCli(['mission', 'submit', path, '--wait', '--json', '--state-dir', state], {
      cwd: repo,
      env: env(),
    });
    expect(waited.code).toBe(1);
    const c = JSON.parse(waited.stdout).checks[0];
    expect(c.output_head).toContain('HEAD-LINE token=[redacted]');
    expect(c.output_tail).toContain('LAST-LINE failing');
    expect(c.output_head.length + c.output_tail.length).toBeLessThan(9000);
    expect(waited.stdout).not.toContain('hunter2-very-secret');
    const out = tempDir('uh-ci-out-');
    const junit = join(out, 'junit.xml');
    const collected = await runCli(
      ['mission', 'collect', operationId, '--redis', redis.url, '--out', out, '--junit', junit],
      { cwd: repo, env: env() },
    );
    expect(collected.code, collected.stderr).toBe(0);
    const log = readFileSync(join(out, 'check-unit-tests.log'), 'utf8');
    expect(log).toContain('line 1999');
    expect(log).not.toContain('hunter2-very-secret');
    const suites = (await parseJunit(readFileSync(junit, 'utf8'))) as TestSuites;
    expect(suites.testsuite?.[0]?.testcase?.find((t) => t.name === 'unit-tests')?.failure?.[0]?.inner).toContain(
      'LAST-LINE failing',
    );
    // The producer's state dir after --wait is ignored by git.
    expect(readFileSync(join(state, '.gitignore'), 'utf8')).toContain('*');
  }, 60_000);

  it('after submit --wait in a repository, git status stays clean (.harness/ ignored from inside)', async () => {
    const clean = makeRepo();
    dirs.push(clean);
    const { path } = writeMission(clean, ['noop']);
    const waited = await runCli(['mission', 'submit', path, '--wait'], { cwd: clean, env: env() });
    expect(waited.code, waited.stderr).toBe(0);
    expect(existsSync(join(clean, '.harness'))).toBe(true);
    expect(git(clean, 'status', '--porcelain')).toBe('');
  }, 60_000);
});

describe('small things a pipeline trips on', () => {
  it('status marks verification_failed ✘ (not ✔); list | head -1 exits quietly; --state bogus is refused', async () => {
    const state = tempDir('uh-ci-inline-');
    dirs.push(state);
    const fail = { name: 'fails', argv: [process.execPath, '-e', 'process.exit(1)'], timeout_seconds: 30 };
    const { path, operationId } = writeMission(repo, ['edit', 'src/app.js', 'y\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [fail],
    });
    expect((await runCli(['mission', 'run', path, '--state-dir', state], { cwd: repo, env: env() })).code).toBe(1);
    const status = await runCli(['mission', 'status', operationId, '--state-dir', state], { cwd: repo, env: env() });
    expect(status.stdout.split('\n')[0]).toMatch(/^✘ .* completed · verification_failed/);
    for (let i = 0; i < 3; i++)
      await runCli(['mission', 'run', writeMission(repo, ['noop']).path, '--state-dir', state], {
        cwd: repo,
        env: env(),
      });
    // `| true` closes the pipe before uh writes (it takes longer to start): EPIPE every time.
    for (const [args, reader] of [
      [['mission', 'list', '--state-dir', state], 'head -1'],
      [['adapter', 'list', '--state-dir', state], 'head -1'],
      [['mission', 'list', '--state-dir', state], 'true'],
      [['adapter', 'list'], 'true'],
    ] as const) {
      const piped = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const sh = spawn(
          'bash',
          [
            '-c',
            `"${process.execPath}" "${UH_BIN}" ${args.join(' ')} | ${reader} >/dev/null; echo "\${PIPESTATUS[0]}" >&2`,
          ],
          { cwd: repo, env: { ...process.env, ...env() } },
        );
        let stderr = '';
        sh.stderr.on('data', (c) => (stderr += c));
        sh.on('close', (code) => resolve({ code, stderr }));
      });
      expect(piped.stderr).not.toContain('EPIPE');
      expect(piped.stderr.trim()).toBe('0');
    }
    const bogus = await runCli(['mission', 'list', '--state', 'bogus', '--state-dir', state], {
      cwd: repo,
      env: env(),
    });
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toContain('--state: "bogus"');
  }, 60_000);

  it('uh mission --help and uh batch --help list their subcommands', async () => {
    for (const group of ['mission', 'batch']) {
      const r = await runCli([group, '--help'], { cwd: repo, env: env() });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`usage: uh ${group} <command>`);
      expect(r.stdout).toContain(`uh ${group} run`);
    }
  });

  it('adapter list lists manifests under their own ids', async () => {
    const state = tempDir('uh-ci-adapters-');
    dirs.push(state);
    expect(
      (
        await runCli(['adapter', 'add', 'my-agent', '--kind', 'command', '--state-dir', state], {
          cwd: repo,
          env: env(),
        })
      ).code,
    ).toBe(0);
    mkdirSync(join(state, 'adapters'), { recursive: true });
    writeFileSync(join(state, 'adapters', 'broken.yaml'), 'id: [');
    const r = await runCli(['adapter', 'list', '--json', '--state-dir', state], { cwd: repo, env: env() });
    const rows = JSON.parse(r.stdout) as Array<{
      id: string;
      runtime_kind: string | null;
      manifest: string | null;
      name: string;
    }>;
    expect(rows.find((x) => x.id === 'my-agent')).toMatchObject({
      runtime_kind: 'command',
      manifest: join(state, 'adapters', 'my-agent.yaml'),
    });
    expect(rows.find((x) => x.id === 'broken')?.name).toContain('invalid manifest');
  });
});
