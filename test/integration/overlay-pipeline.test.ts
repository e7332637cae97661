/**
 * `uh mission run` with copy-on-write sandboxes (`UH_SANDBOX_BACKEND`, docs/sandboxes.md) through
 * the real CLI under bubblewrap: the agent's edits, deletions, new files and ignored files land in
 * the sandbox's upper layer; the checks see the merged tree; the receipt's diff is byte for byte
 * the worktree backend's; the sandbox goes with its lease on the base, or is kept with both and
 * collected by `uh gc`; `auto` falls back to a worktree without bubblewrap and says why, and
 * `overlay` then refuses by name.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';

const created: string[] = [];
let repo: string;

const EDITS = [
  'echo changed >> src/app.txt',
  'rm docs/guide.md',
  'echo new > added.txt',
  'echo junk > build.log',
  'mkdir -p deep/er && echo y > deep/er/z',
  'chmod +x run.sh',
].join(' && ');
const SEES_MERGED =
  'grep -q changed src/app.txt && test ! -e docs/guide.md && test -f README.md && test -x run.sh && test ! -e build.log';

beforeAll(() => {
  repo = makeRepo({
    'README.md': '# demo\n',
    'src/app.txt': 'v1\n',
    'docs/guide.md': 'guide\n',
    'run.sh': 'echo hi\n',
    '.gitignore': '*.log\n',
  });
  created.push(repo);
});
afterAll(() => created.forEach(removeDir));

async function run(env: Record<string, string>, patch: Record<string, unknown> = {}, cacheDir = tempDir('uh-cache-')) {
  const stateDir = tempDir('uh-state-');
  created.push(stateDir, cacheDir);
  const { path, operationId } = writeMission(repo, [], {
    runtime_config_overrides: { command: { argv: ['sh', '-c', EDITS] } },
    scope: { allowed_change_globs: ['**'] },
    verification: [{ name: 'sees-merged', argv: ['sh', '-c', SEES_MERGED], timeout_seconds: 30 }],
    ...patch,
  });
  const result = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], {
    cwd: repo,
    env: { UH_CACHE_DIR: cacheDir, ...env },
  });
  const receipt = JSON.parse(result.stdout || 'null');
  const events = readFileSync(join(stateDir, 'operations', operationId, 'events.jsonl'), 'utf8');
  return { result, receipt, cacheDir, stateDir, events, operationId };
}

const sandboxesIn = (cacheDir: string) => readdirSync(join(cacheDir, 'sandboxes')).filter((e) => !e.startsWith('.'));
const leasesIn = (cacheDir: string) => {
  const bases = join(cacheDir, 'sandboxes', '.bases');
  const dirs = readdirSync(bases).filter((b) => existsSync(join(bases, b, 'leases', '.')));
  return dirs.flatMap((b) => readdirSync(join(bases, b, 'leases')));
};

describe('copy-on-write sandboxes through the pipeline', () => {
  it('verifies the same change as a worktree sandbox, with the same diff, and leaves no sandbox or lease', async () => {
    const overlay = await run({ UH_SANDBOX_BACKEND: 'overlay' });
    const worktree = await run({ UH_SANDBOX_BACKEND: 'worktree', UH_SANDBOX_POOL_SIZE: '0' });
    for (const r of [overlay, worktree]) expect(r.result.code, r.result.stderr).toBe(0);
    expect(overlay.receipt.verdict).toBe('verified');
    expect(overlay.receipt.sandbox.backend).toBe('overlay');
    expect(overlay.receipt.isolation.kind).toBe('bwrap');
    expect(worktree.receipt.sandbox.backend).toBe('git-worktree');
    expect(overlay.receipt.changed_files).toEqual(worktree.receipt.changed_files);
    expect(overlay.receipt.changed_files.map((f: { path: string }) => f.path)).toEqual(
      ['deep/er/z', 'added.txt', 'docs/guide.md', 'run.sh', 'src/app.txt'].sort(),
    );
    expect(overlay.receipt.diff_digest).toBe(worktree.receipt.diff_digest);
    expect(overlay.receipt.final_tree).toBe(worktree.receipt.final_tree);
    expect(overlay.events).toMatch(/"ignored_removed":\["build.log"\]/);
    expect(sandboxesIn(overlay.cacheDir)).toEqual([]);
    expect(leasesIn(overlay.cacheDir)).toEqual([]);
  });

  it('keeps a failed sandbox with its upper layer and its lease, and `uh gc` collects both', async () => {
    const failing = { name: 'fails', argv: ['sh', '-c', 'exit 1'], timeout_seconds: 30 };
    const r = await run({ UH_SANDBOX_BACKEND: 'overlay' }, { verification: [failing] });
    expect(r.receipt.verdict).not.toBe('verified');
    expect(r.receipt.sandbox).toMatchObject({ backend: 'overlay', retained: true });
    const [name] = sandboxesIn(r.cacheDir);
    expect(leasesIn(r.cacheDir)).toEqual([name]);
    const upper = join(r.cacheDir, 'sandboxes', '.uh', name as string, 'upper');
    expect(readFileSync(join(upper, 'added.txt'), 'utf8')).toBe('new\n');
    // Under a cache cap of one byte, the kept sandbox is the first thing the cap removes.
    const gc = await runCli(['gc', '--json', '--state-dir', r.stateDir], {
      cwd: repo,
      env: { UH_CACHE_DIR: r.cacheDir, UH_CACHE_CAP_BYTES: '1' },
    });
    expect(gc.code, gc.stderr).toBe(0);
    expect(existsSync(upper)).toBe(false);
    expect(leasesIn(r.cacheDir)).toEqual([]);
  });

  it('auto makes a worktree without bubblewrap and says why; overlay refuses by name', async () => {
    const auto = await run({ UH_SANDBOX_BACKEND: 'auto', UH_ISOLATION: 'off' });
    expect(auto.receipt.verdict).toBe('verified');
    expect(auto.receipt.sandbox.backend).toBe('git-worktree');
    expect(auto.events).toMatch(/"overlay_unavailable":"the operation runs without bubblewrap/);
    const forced = await run({ UH_SANDBOX_BACKEND: 'overlay', UH_ISOLATION: 'off' });
    expect(forced.receipt.verdict).not.toBe('verified');
    expect(JSON.stringify(forced.receipt.outcome)).toMatch(/UH_SANDBOX_BACKEND=overlay cannot make this sandbox/);
  });

  it('renames a directory of the base only by copying: `mv` works, `git mv` fails with EXDEV (docs/sandboxes.md)', async () => {
    const rename = (how: string) => ({
      runtime_config_overrides: { command: { argv: ['sh', '-c', how] } },
      verification: [],
    });
    const moved = await run({ UH_SANDBOX_BACKEND: 'overlay' }, rename('mv docs handbook'));
    expect(moved.receipt.status, moved.result.stderr).toBe('completed');
    expect(moved.receipt.sandbox.backend).toBe('overlay');
    expect(moved.receipt.changed_files).toEqual([
      { path: 'handbook/guide.md', from: 'docs/guide.md', status: 'renamed' },
    ]);
    const gitMoved = await run({ UH_SANDBOX_BACKEND: 'overlay' }, rename('git mv docs handbook'));
    expect(gitMoved.receipt.status).toBe('failed');
    expect(gitMoved.receipt.outcome.message).toMatch(/renaming 'docs' failed: Invalid cross-device link/);
    expect(gitMoved.receipt.outcome.hint).toMatch(/run this mission with UH_SANDBOX_BACKEND=worktree/);
    const inWorktree = await run({ UH_SANDBOX_BACKEND: 'worktree' }, rename('git mv docs handbook'));
    expect(inWorktree.receipt.status, inWorktree.result.stderr).toBe('completed');
  });

  it('uh doctor says which backend makes sandboxes, and fails overlay without bubblewrap by name', async () => {
    const cacheDir = tempDir('uh-cache-');
    const stateDir = tempDir('uh-state-');
    created.push(cacheDir, stateDir);
    const doctor = (env: Record<string, string>) =>
      runCli(['doctor', '--json', '--state-dir', stateDir], { cwd: repo, env: { UH_CACHE_DIR: cacheDir, ...env } });
    const line = (out: string) => JSON.parse(out).findings.find((f: { what: string }) => f.what === 'sandboxes');
    const auto = await doctor({ UH_SANDBOX_BACKEND: 'auto' });
    expect(line(auto.stdout)).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/^overlay \(UH_SANDBOX_BACKEND=auto\).*EXDEV: `git mv` of one fails/),
    });
    const off = await doctor({ UH_SANDBOX_BACKEND: 'overlay', UH_ISOLATION: 'off' });
    expect(off.code).toBe(3);
    expect(line(off.stdout)).toMatchObject({
      ok: false,
      core: true,
      detail: expect.stringMatching(/no bubblewrap in use/),
    });
    const worktree = await doctor({ UH_SANDBOX_BACKEND: 'worktree' });
    expect(line(worktree.stdout).detail).toMatch(/^worktree/);
  });
});
