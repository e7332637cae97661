/**
 * The resident uh (`uh daemon start`, docs/resident.md) through the real CLI: `uh mission run`
 * hands its run to it when serving it is the same as running it, and the user sees the same
 * receipt, output and exit code; a run with another environment, or one that comes while another
 * is served, runs in its own process; the client's Ctrl-C, and the client going away, cancel the
 * served run; `uh daemon stop` waits for it. Needs `npm run build` (bin/uh.js runs the bundle).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { waitFor } from '../support/process.js';
import { cliEnv, residentStatus, startResident, type TestResident } from '../support/resident.js';
import { removeDir, tempDir } from '../support/temp.js';

const created: string[] = [];
let cacheDir: string;
let repo: string;
let resident: TestResident;

beforeAll(async () => {
  cacheDir = tempDir('uh-resident-');
  repo = makeRepo({ 'README.md': '# demo\n' });
  created.push(cacheDir, repo);
  resident = await startResident(cacheDir);
}, 30_000);

afterAll(async () => {
  resident.child.kill('SIGTERM');
  await resident.exited;
  created.forEach(removeDir);
});

function stateDir(): string {
  const d = tempDir('uh-resident-state-');
  created.push(d);
  return d;
}

async function run(agentArgs: string[], extra: string[] = [], env: Record<string, string> = {}) {
  const { path, operationId } = writeMission(repo, agentArgs, { scope: { allowed_change_globs: ['*.txt'] } });
  const state = stateDir();
  const result = await runCli(['mission', 'run', path, '--state-dir', state, ...extra], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir, ...env },
  });
  return { ...result, operationId, state };
}

/** A client whose mission hangs, once the resident uh runs it (its record says `running`). */
async function hangingClient(stdio: 'ignore' | 'pipe') {
  const { path, operationId } = writeMission(repo, ['hang']);
  const state = stateDir();
  const child = spawn(process.execPath, [UH_BIN, 'mission', 'run', path, '--state-dir', state], {
    cwd: repo,
    env: cliEnv(cacheDir),
    stdio: ['ignore', stdio, stdio],
  });
  let stderr = '';
  child.stderr?.on('data', (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const dir = join(state, 'operations', operationId);
  const record = join(dir, 'operation.json');
  expect(await waitFor(() => existsSync(record) && readFileSync(record, 'utf8').includes('"running"'), 20_000)).toBe(
    true,
  );
  return { child, path, dir, exited, stderr: () => stderr };
}

/** What a user compares between two runs: the receipt without its ids, times and signature. */
function receiptView(stdout: string) {
  const r = JSON.parse(stdout);
  return {
    status: r.status,
    verdict: r.verdict,
    exit_code: r.exit_code,
    changed: r.changed_files.map((f: { path: string }) => f.path),
    backend: r.sandbox?.backend,
    signed: typeof r.signature === 'object' && r.signature !== null,
  };
}

describe('uh mission run with a resident uh', () => {
  it('is served by it, with the same receipt, output and exit code as a run in its own process', async () => {
    const before = await residentStatus(cacheDir);
    const served = await run(['edit', 'hello.txt', 'hi\n'], ['--json']);
    const own = await run(['edit', 'hello.txt', 'hi\n'], ['--json'], { UH_RESIDENT: 'off' });
    expect(served.code).toBe(0);
    expect(own.code).toBe(0);
    expect(receiptView(served.stdout)).toEqual(receiptView(own.stdout));
    expect(receiptView(served.stdout)).toMatchObject({ status: 'completed', changed: ['hello.txt'], signed: true });
    const after = await residentStatus(cacheDir);
    expect(after.served).toBe(before.served + 1);
    // UH_RESIDENT=off is another environment too: it is never even offered, so nothing is refused.
    expect(after.refused).toBe(before.refused);
    // The receipt verifies as any other: the served run signed it with this cache's key.
    const receipt = join(served.state, 'operations', served.operationId, 'receipt.json');
    const verified = await runCli(['receipt', 'verify', receipt], { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
    expect(verified.code).toBe(0);
  }, 60_000);

  it('passes a failed run through: its exit code, its summary and the runtime stderr tail', async () => {
    const before = await residentStatus(cacheDir);
    const served = await run(['exit', '3', 'the agent broke down']);
    const own = await run(['exit', '3', 'the agent broke down'], [], { UH_RESIDENT: 'off' });
    expect(served.code).toBe(1);
    expect(served.code).toBe(own.code);
    expect((await residentStatus(cacheDir)).served).toBe(before.served + 1);
    expect(served.stdout + served.stderr).toContain('the agent broke down');
    const strip = (s: string) => s.replace(/op-\d+-\d+/g, 'OP').replace(/\/tmp\/[^\s)]+/g, 'PATH');
    expect(strip(served.stdout)).toBe(strip(own.stdout));
  }, 60_000);

  it('refuses a run whose environment differs, naming the variable, never its value; the run goes on in its own process', async () => {
    const before = await residentStatus(cacheDir);
    const r = await run(['edit', 'hello.txt', 'hi\n'], ['--json'], { UH_TEST_ONLY_HERE: 'a-value-never-logged' });
    expect(r.code).toBe(0);
    expect(receiptView(r.stdout).status).toBe('completed');
    const after = await residentStatus(cacheDir);
    expect(after.served).toBe(before.served);
    expect(after.refused).toBe(before.refused + 1);
    expect(after.last_refusal).toContain('UH_TEST_ONLY_HERE');
    expect(JSON.stringify(after)).not.toContain('a-value-never-logged');
    expect(resident.stderr()).toContain('UH_TEST_ONLY_HERE');
    expect(resident.stderr()).not.toContain('a-value-never-logged');
  }, 60_000);

  it("makes the run's files with the client's umask, not its own", async () => {
    const before = await residentStatus(cacheDir);
    const { path, operationId } = writeMission(repo, ['edit', 'hello.txt', 'hi\n']);
    const state = stateDir();
    const child = spawn(
      'sh',
      ['-c', 'umask 077; exec "$@"', 'sh', process.execPath, UH_BIN, 'mission', 'run', path, '--state-dir', state],
      {
        cwd: repo,
        env: cliEnv(cacheDir),
        stdio: 'ignore',
      },
    );
    expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(0);
    expect((await residentStatus(cacheDir)).served).toBe(before.served + 1);
    for (const name of ['receipt.json', 'diff.patch'])
      expect(statSync(join(state, 'operations', operationId, name)).mode & 0o777).toBe(0o600);
  }, 60_000);

  it('keeps a command line naming /dev or /proc paths (they are per process) in its own process', async () => {
    const before = await residentStatus(cacheDir);
    const { path } = writeMission(repo, ['noop']);
    const state = stateDir();
    // /proc/self/cwd/… is the mission in the client; in another process it would be that one's.
    const r = await runCli(['mission', 'run', `/proc/self/cwd/${basename(path)}`, '--json', '--state-dir', state], {
      cwd: dirname(path),
      env: { UH_CACHE_DIR: cacheDir },
    });
    expect(r.code, r.stderr).toBe(0);
    const after = await residentStatus(cacheDir);
    expect(after.served).toBe(before.served);
    expect(after.refused).toBe(before.refused);
  }, 60_000);

  it("cancels the served run on the client's Ctrl-C (exit 4, receipt written), and runs a second client meanwhile in its own process", async () => {
    const { child, path, dir, exited, stderr } = await hangingClient('pipe');
    expect((await residentStatus(cacheDir)).serving).toEqual(expect.arrayContaining(['mission', 'run', path]));
    // Meanwhile another run is not held up behind it.
    const second = await run(['edit', 'second.txt', 'x\n'], ['--json']);
    expect(second.code).toBe(0);
    expect((await residentStatus(cacheDir)).last_refusal).toContain('serving another run');
    child.kill('SIGINT');
    expect(await exited).toBe(4);
    expect(stderr()).toContain('SIGINT: cancelling');
    const receipt = JSON.parse(readFileSync(join(dir, 'receipt.json'), 'utf8'));
    expect(receipt.status).toBe('cancelled');
  }, 60_000);

  it('cancels the served run when its client is killed, and serves the next one', async () => {
    const { child, dir } = await hangingClient('ignore');
    child.kill('SIGKILL');
    const receiptFile = join(dir, 'receipt.json');
    expect(await waitFor(() => existsSync(receiptFile), 20_000)).toBe(true);
    expect(JSON.parse(readFileSync(receiptFile, 'utf8')).status).toBe('cancelled');
    expect(await waitFor(async () => (await residentStatus(cacheDir)).serving === null, 10_000)).toBe(true);
    const before = (await residentStatus(cacheDir)).served;
    expect((await run(['noop'])).code).toBe(0);
    expect((await residentStatus(cacheDir)).served).toBe(before + 1);
  }, 60_000);
});

describe('uh daemon', () => {
  it('is reported by uh doctor, and its absence too (never as a problem)', async () => {
    const doctor = async (dir: string) => {
      const r = await runCli(['doctor', '--json'], { cwd: repo, env: { UH_CACHE_DIR: dir } });
      return JSON.parse(r.stdout).findings.find((f: { what: string }) => f.what === 'resident');
    };
    expect(await doctor(cacheDir)).toMatchObject({ ok: true, core: false });
    expect((await doctor(cacheDir)).detail).toMatch(
      new RegExp(`^pid ${resident.child.pid} serves uh mission run here: \\d+ served`),
    );
    const none = tempDir('uh-resident-none-');
    created.push(none);
    expect((await doctor(none)).detail).toContain('none: each uh mission run starts uh');
  }, 60_000);

  it('refuses a second resident uh on the same cache dir (exit 2, naming the socket)', async () => {
    const r = await runCli(['daemon', 'start'], { cwd: '/', env: { UH_CACHE_DIR: cacheDir } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`a resident uh already serves ${join(cacheDir, 'daemon', 'uh.sock')}`);
    expect((await residentStatus(cacheDir)).running).toBe(true);
  }, 30_000);

  it('stop ends it after the run it serves, removes its socket; status then says none (exit 1)', async () => {
    const own = tempDir('uh-resident-stop-');
    created.push(own);
    const daemon = await startResident(own);
    // An agent that takes a second, so the stop comes while it runs.
    const { path, operationId } = writeMission(repo, [], {
      runtime_config_overrides: { command: { argv: ['sh', '-c', 'sleep 1; echo x > slow.txt'] } },
    });
    const state = stateDir();
    const running = runCli(['mission', 'run', path, '--state-dir', state], { cwd: repo, env: { UH_CACHE_DIR: own } });
    const record = join(state, 'operations', operationId, 'operation.json');
    await waitFor(() => existsSync(record), 20_000);
    const stop = await runCli(['daemon', 'stop'], { cwd: '/', env: { UH_CACHE_DIR: own } });
    expect(stop.code).toBe(0);
    expect(stop.stdout).toContain(`stopped the resident uh (pid ${daemon.child.pid})`);
    expect((await running).code).toBe(0);
    expect(await daemon.exited).toBe(0);
    expect(daemon.stderr()).toMatch(/stopped; served 1 run\(s\), refused 0/);
    expect(existsSync(join(own, 'daemon', 'uh.sock'))).toBe(false);
    const status = await runCli(['daemon', 'status'], { cwd: '/', env: { UH_CACHE_DIR: own } });
    expect(status.code).toBe(1);
    expect(status.stdout).toContain(`no resident uh serves ${own}`);
  }, 60_000);

  it('ends itself after --idle-minutes with nothing served', async () => {
    const own = tempDir('uh-resident-idle-');
    created.push(own);
    const daemon = await startResident(own, ['--idle-minutes', '0.01']);
    expect(await daemon.exited).toBe(0);
    expect(existsSync(join(own, 'daemon', 'uh.sock'))).toBe(false);
  }, 30_000);

  it('names a bad --idle-minutes (exit 2) and starts nothing', async () => {
    const own = tempDir('uh-resident-bad-');
    created.push(own);
    const r = await runCli(['daemon', 'start', '--idle-minutes', 'soon'], { cwd: '/', env: { UH_CACHE_DIR: own } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--idle-minutes: "soon" is not a number of minutes');
    expect(existsSync(join(own, 'daemon'))).toBe(false);
  }, 30_000);
});
