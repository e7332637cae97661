/**
 * `uh mission run` end to end through the real CLI: real git repositories, real worktrees, real
 * child processes. Every run also asserts the user's checkout is untouched.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from '../support/cli.js';
import { checkoutFingerprint, git, makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';
import { processGone, waitFor } from '../support/process.js';

let cacheDir: string;
let repo: string;
const created: string[] = [];

beforeAll(() => {
  cacheDir = tempDir('uh-cache-');
  repo = makeRepo({
    'README.md': '# demo\n',
    'src/app.txt': 'v1\n',
    'docs/guide.md': 'guide\n',
    'config/prod.env': 'X=1\n',
  });
  // A dirty user checkout: staged, unstaged, untracked and a stash, all of which must survive.
  writeFileSync(join(repo, 'src/app.txt'), 'v1 local edit\n');
  writeFileSync(join(repo, 'staged.txt'), 'staged\n');
  git(repo, 'add', 'staged.txt');
  writeFileSync(join(repo, 'untracked.txt'), 'mine\n');
  writeFileSync(join(repo, 'stashme.txt'), 'stash\n');
  git(repo, 'stash', 'push', '-u', '-m', 'user stash', '--', 'stashme.txt');
  created.push(cacheDir, repo);
});
afterAll(() => created.forEach(removeDir));

interface Run extends CliResult {
  stateDir: string;
  receipt: any;
  operationId: string;
}

async function run(
  agentArgs: string[],
  patch: Record<string, unknown> = {},
  extra: string[] = [],
  opts: Parameters<typeof runCli>[1] extends infer O ? Partial<O> : never = {},
): Promise<Run> {
  const before = checkoutFingerprint(repo);
  const stateDir = tempDir('uh-state-');
  created.push(stateDir);
  const { path, operationId } = writeMission(repo, agentArgs, patch);
  const result = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir, ...extra], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir },
    ...opts,
  });
  expect(checkoutFingerprint(repo)).toBe(before);
  let receipt: any = null;
  try {
    receipt = JSON.parse(result.stdout);
  } catch {
    // not JSON: the test decides whether that is expected
  }
  return { ...result, stateDir, receipt, operationId };
}

describe('uh mission run', () => {
  it('runs the happy path: worktree, edit, diff, checks, receipt, exit 0', async () => {
    const r = await run(['edit', 'src/feature.txt', 'new feature\\n'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [
        { name: 'feature-present', argv: ['grep', '-q', 'new feature', 'src/feature.txt'], timeout_seconds: 30 },
      ],
    });
    expect(r.code).toBe(0);
    expect(r.receipt).toMatchObject({
      operation_id: r.operationId,
      mission_id: 'm-test',
      status: 'completed',
      verdict: 'verified',
      changed_files: [{ path: 'src/feature.txt', status: 'added' }],
      final_message: 'Edited src/feature.txt.',
      final_message_source: 'sentinel',
      exit_code: 0,
    });
    expect(r.receipt.repository.base_commit).toBe(git(repo, 'rev-parse', 'main'));
    const dir = join(r.stateDir, 'operations', r.operationId);
    for (const f of [
      'receipt.json',
      'events.jsonl',
      'diff.patch',
      'runtime-final.txt',
      'runtime-result.yaml',
      'mission.json',
      'operation.json',
      'runtime.stdout.log',
    ]) {
      expect(existsSync(join(dir, f)), f).toBe(true);
    }
    expect(readFileSync(join(dir, 'diff.patch'), 'utf8')).toContain('+new feature');
    const types = readFileSync(join(dir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).type);
    expect(types[0]).toBe('operation.started');
    expect(types).toContain('sandbox.created');
    expect(types.filter((t) => t === 'runtime.finished')).toHaveLength(1);
    expect(types).toContain('verification.check');
    expect(types).toContain('operation.completed');
    // A verified run's sandbox is removed; the receipt names the backend that made it (the default).
    expect(existsSync(r.receipt.sandbox.path)).toBe(false);
    expect(r.receipt.sandbox.backend).toBe('git-worktree');
    // The base commit is the committed state: the user's uncommitted edit is not in the sandbox diff.
    expect(readFileSync(join(dir, 'diff.patch'), 'utf8')).not.toContain('local edit');
  });

  it('flags an edit outside allowed_change_globs as scope_violation, exit 1, checks not run', async () => {
    const r = await run(['edit', 'README.md', 'rewritten'], {
      scope: { allowed_change_globs: ['src/**'] },
      verification: [{ name: 'ok', argv: ['true'] }],
    });
    expect(r.code).toBe(1);
    expect(r.receipt.verdict).toBe('scope_violation');
    expect(r.receipt.scope.violations).toEqual([{ path: 'README.md', reason: 'outside_allowed' }]);
    expect(r.receipt.checks).toEqual([]);
    expect(r.receipt.sandbox.retained).toBe(true);
  });

  it('flags a forbidden file even inside the allowed globs', async () => {
    const r = await run(['edit', 'config/prod.env', 'X=2'], {
      scope: { allowed_change_globs: ['**'], forbidden_globs: ['**/*.env'] },
    });
    expect(r.code).toBe(1);
    expect(r.receipt.scope.violations).toEqual([{ path: 'config/prod.env', reason: 'forbidden', glob: '**/*.env' }]);
  });

  it('checks both paths of a rename and the path of a deletion', async () => {
    const renamed = await run(['rename', 'docs/guide.md', 'src/guide.md'], {
      scope: { allowed_change_globs: ['src/**'] },
    });
    expect(renamed.receipt.changed_files).toEqual([{ path: 'src/guide.md', status: 'renamed', from: 'docs/guide.md' }]);
    expect(renamed.receipt.scope.violations.map((v: any) => v.path)).toEqual(['docs/guide.md']);
    const deleted = await run(['delete', 'docs/guide.md'], { scope: { allowed_change_globs: ['src/**'] } });
    expect(deleted.receipt.changed_files).toEqual([{ path: 'docs/guide.md', status: 'deleted' }]);
    expect(deleted.receipt.verdict).toBe('scope_violation');
  });

  it('reports verification_failed, exit 1, when no edit is made and a check fails', async () => {
    const r = await run(['noop'], {
      verification: [{ name: 'must-fail', argv: ['node', '-e', 'console.log("boom"); process.exit(3)'] }],
    });
    expect(r.code).toBe(1);
    expect(r.receipt).toMatchObject({ status: 'completed', verdict: 'verification_failed', changed_files: [] });
    expect(r.receipt.checks[0]).toMatchObject({ name: 'must-fail', exit_code: 3, passed: false, timed_out: false });
    expect(readFileSync(r.receipt.checks[0].log, 'utf8')).toContain('boom');
  });

  it('writes a timed_out receipt when the runtime exceeds timeout_seconds, and the whole process group is gone', async () => {
    const pidFile = join(tempDir('uh-pid-'), 'grandchild.pid');
    // Unisolated: the process-group kill (the isolated PID-namespace kill: test/security/processes.test.ts).
    const r = await run(['hang', pidFile], { timeout_seconds: 1 }, [], {
      env: { UH_CACHE_DIR: cacheDir, UH_ISOLATION: 'off' },
    });
    expect(r.code).toBe(1);
    expect(r.receipt.status).toBe('failed');
    expect(r.receipt.outcome).toMatchObject({ raw: 'timeout', timed_out: true });
    const grandchild = Number(readFileSync(pidFile, 'utf8'));
    expect(await waitFor(() => processGone(grandchild), 5000)).toBe(true); // killed with its group
  });

  it('marks a check that exceeds its timeout as timed_out and kills it', async () => {
    const r = await run(['noop'], { verification: [{ name: 'slow', argv: ['sleep', '30'], timeout_seconds: 1 }] });
    expect(r.code).toBe(1);
    expect(r.receipt.checks[0]).toMatchObject({ name: 'slow', timed_out: true, passed: false });
    expect(r.receipt.checks[0].duration_ms).toBeLessThan(20_000);
  });

  it('caps captured check output with a truncation marker', async () => {
    const r = await run(['noop'], {
      verification: [{ name: 'loud', argv: ['node', '-e', 'process.stdout.write("z".repeat(3*1024*1024))'] }],
    });
    const check = r.receipt.checks[0];
    expect(check).toMatchObject({ passed: true, output_truncated: true, output_bytes: 3 * 1024 * 1024 });
    const log = readFileSync(check.log, 'utf8');
    expect(log.length).toBeLessThan(1.1 * 1024 * 1024);
    expect(log).toContain('uh truncated this output');
  });

  it('keeps memory flat while the runtime prints 200 MB', async () => {
    const r = await run(['flood', '200'], {}, [], { sampleMemory: true });
    expect(r.code).toBe(0);
    expect(r.receipt.final_message).toBe('Printed 200 MiB.');
    const log = join(r.stateDir, 'operations', r.operationId, 'runtime.stdout.log');
    // The log keeps its first 64 MiB and a marker (docs/security.md "Input limits").
    const kept = readFileSync(log);
    expect(kept.length).toBeGreaterThan(64 * 1024 * 1024);
    expect(kept.length).toBeLessThan(64 * 1024 * 1024 + 100);
    expect(kept.subarray(-100).toString()).toContain('[uh: log capped at 67108864 bytes; the rest was dropped]');
    expect(r.peakRssKb).toBeGreaterThan(0);
    expect(r.peakRssKb).toBeLessThan(160 * 1024); // far below the 200 MB printed
  });

  it('takes the last of several sentinel blocks, with CRLF line endings', async () => {
    const r = await run(['crlf']);
    expect(r.receipt.final_message).toBe('final answer');
    expect(readFileSync(join(r.stateDir, 'operations', r.operationId, 'runtime-final.txt'), 'utf8')).toBe(
      'final answer',
    );
  });

  it('reports a missing runtime binary as blocked, exit 3, with a hint', async () => {
    const r = await run([], { runtime_config_overrides: { command: { argv: ['uh-no-such-agent-binary'] } } });
    expect(r.code).toBe(3);
    expect(r.receipt.status).toBe('blocked');
    expect(r.receipt.outcome.hint).toContain('uh-no-such-agent-binary');
  });

  it('never puts a secret from the runtime env into events, receipts or the mission copy', async () => {
    const secret = 'sk-live-8c1f0e6a2b9d4471';
    const r = await run(['echo-env', 'MY_API_KEY'], {
      runtime_config_overrides: {
        command: {
          argv: [process.execPath, (await import('../support/cli.js')).FAKE_AGENT, 'echo-env', 'MY_API_KEY'],
          env: { MY_API_KEY: secret },
        },
      },
    });
    expect(r.code).toBe(0);
    const dir = join(r.stateDir, 'operations', r.operationId);
    for (const f of ['receipt.json', 'events.jsonl', 'mission.json', 'runtime-result.yaml']) {
      expect(readFileSync(join(dir, f), 'utf8'), f).not.toContain(secret);
    }
    expect(r.stdout).not.toContain(secret);
  });

  it('cancels on SIGINT: exit 4, a cancelled receipt, the runtime group killed', async () => {
    const pidFile = join(tempDir('uh-pid-'), 'grandchild.pid');
    let uhPid = 0;
    // Unisolated (the agent writes its grandchild's host pid outside its sandbox).
    const pending = run(['hang', pidFile], {}, [], {
      env: { UH_CACHE_DIR: cacheDir, UH_ISOLATION: 'off' },
      onSpawn: (pid) => (uhPid = pid),
    });
    // Wait for the fake agent to be running (it writes its grandchild's pid), then interrupt.
    expect(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '')).toBe(true);
    process.kill(uhPid, 'SIGINT');
    const r = await pending;
    expect(r.code).toBe(4);
    expect(r.receipt.status).toBe('cancelled');
    expect(await waitFor(() => processGone(Number(readFileSync(pidFile, 'utf8'))), 5000)).toBe(true);
  });

  it('attaches to the existing operation on a second identical run, and refuses another contract under the same id', async () => {
    const stateDir = tempDir('uh-state-');
    created.push(stateDir);
    const countFile = join(tempDir('uh-count-'), 'count');
    const { path, operationId } = writeMission(repo, ['count', countFile]);
    const args = ['mission', 'run', path, '--json', '--state-dir', stateDir];
    // Unisolated: the fake agent counts its runs in a file outside its sandbox.
    const env = { UH_CACHE_DIR: cacheDir, UH_ISOLATION: 'off' };
    const first = await runCli(args, { cwd: repo, env });
    const second = await runCli(args, { cwd: repo, env });
    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout).operation_id).toBe(operationId);
    expect(readFileSync(countFile, 'utf8').trim().split('\n')).toHaveLength(1);
    // Same operation_id, another objective: a conflict, exit 2, nothing run.
    writeFileSync(path, readFileSync(path, 'utf8').replace('Do what the fake agent does.', 'Something else.'));
    const conflict = await runCli(args, { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
    expect(conflict.code).toBe(2);
    expect(conflict.stderr).toContain('already exists with another contract digest');
    expect(readFileSync(countFile, 'utf8').trim().split('\n')).toHaveLength(1);
  });

  it('runs six missions on the same repository at once, each in its own sandbox', async () => {
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    const runs = await Promise.all(
      names.map((n) =>
        run(['edit', `src/${n}.txt`, n.toUpperCase()], { scope: { allowed_change_globs: [`src/${n}.txt`] } }),
      ),
    );
    runs.forEach((r, i) => {
      expect(r.code, r.stderr).toBe(0);
      expect(r.receipt.changed_files.map((f: any) => f.path)).toEqual([`src/${names[i]}.txt`]);
    });
    expect(new Set(runs.map((r) => r.receipt.sandbox.path)).size).toBe(names.length);
  });
});

describe('uh mission run refuses bad input with exit 2 and writes nothing', () => {
  it.each<[string, (m: Record<string, unknown>) => void, string]>([
    ['unknown key', (m) => (m.objectve = 'x'), 'objectve: unknown key'],
    ['wrong type', (m) => (m.timeout_seconds = 'soon'), 'timeout_seconds'],
    ['bad id', (m) => (m.operation_id = 'no spaces allowed'), 'operation_id'],
    ['shell string as a check', (m) => (m.verification = [{ name: 'c', argv: 'npm test' }]), 'verification[0].argv'],
    ['absolute glob', (m) => (m.scope = { allowed_change_globs: ['/etc/passwd'] }), 'scope.allowed_change_globs[0]'],
    ['.. glob', (m) => (m.scope = { allowed_change_globs: ['src/**', '../x'] }), 'scope.allowed_change_globs[1]'],
    ['unknown runtime', (m) => ((m.runtime = 'nope'), (m.runtime_config_overrides = {})), 'unknown runtime "nope"'],
    [
      'runtime_config typo',
      (m) => (m.runtime_config_overrides = { command: { argv: ['true'], promt_via: 'file' } }),
      'runtime_config_overrides.command.promt_via: unknown key',
    ],
    ['missing required runtime_config', (m) => (m.runtime_config_overrides = {}), 'runtime_config.argv'],
    [
      'capability the runtime lacks',
      (m) => (m.requires = ['interactive_steering']),
      'cannot meet requires: interactive_steering',
    ],
    [
      'ref that does not exist',
      (m) => (m.repository = { url: (m.repository as any).url, ref: 'no-such-branch' }),
      'repository.ref',
    ],
    ['repository path that does not exist', (m) => (m.repository = { url: '/nonexistent/repo' }), 'repository.url'],
  ])('%s', async (_name, mutate, expected) => {
    const stateDir = join(tempDir('uh-state-'), 'state');
    const { path } = writeMission(repo, ['noop'], {}, 'json');
    const mission = JSON.parse(readFileSync(path, 'utf8'));
    mutate(mission);
    writeFileSync(path, JSON.stringify(mission));
    const before = checkoutFingerprint(repo);
    const r = await runCli(['mission', 'run', path, '--state-dir', stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: cacheDir },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(expected);
    expect(existsSync(stateDir)).toBe(false);
    expect(checkoutFingerprint(repo)).toBe(before);
  });

  it('names the file when it is not valid YAML', async () => {
    const dir = tempDir('uh-bad-');
    writeFileSync(join(dir, 'm.yaml'), 'schema_version: [unclosed\n');
    const r = await runCli(['mission', 'run', join(dir, 'm.yaml')], { cwd: dir, env: { UH_CACHE_DIR: cacheDir } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('m.yaml is not valid YAML');
    expect(readdirSync(dir)).toEqual(['m.yaml']);
  });
});
