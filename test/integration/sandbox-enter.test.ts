/**
 * `uh sandbox list` and `uh sandbox enter` on sandboxes kept after a failed mission, through the
 * real CLI: an overlay sandbox (empty on the host) shows the mission's final tree to the command,
 * which may write there while nothing it writes reaches the kept upper layer; a worktree sandbox
 * is its directory; either way the command runs isolated as a check (the agent's files are
 * hostile): no network, a private home, not the caller's environment; the command's exit code is
 * uh's; no such sandbox is exit 2 naming the argument.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';

const created: string[] = [];
let repo: string;

const EDITS =
  "echo more >> README.md && rm docs/guide.md && echo new > added.txt && printf '#!/bin/sh\\necho tool-ran\\n' > tool.sh && chmod +x tool.sh";
const FAILING = { name: 'fails', argv: ['sh', '-c', 'exit 1'], timeout_seconds: 30 };

beforeAll(() => {
  repo = makeRepo({ 'README.md': '# demo\n', 'docs/guide.md': 'guide\n', 'src/app.txt': 'v1\n' });
  created.push(repo);
});
afterAll(() => created.forEach(removeDir));

/** A failed mission (its sandbox kept) on `backend`; the cache and the receipt. */
async function keptMission(backend: 'overlay' | 'worktree') {
  const cacheDir = tempDir('uh-cache-');
  const stateDir = tempDir('uh-state-');
  created.push(cacheDir, stateDir);
  const { path, operationId } = writeMission(repo, [], {
    runtime_config_overrides: { command: { argv: ['sh', '-c', EDITS] } },
    scope: { allowed_change_globs: ['**'] },
    verification: [FAILING],
  });
  const env = { UH_CACHE_DIR: cacheDir, UH_SANDBOX_BACKEND: backend, UH_SANDBOX_POOL_SIZE: '0' };
  const result = await runCli(['mission', 'run', path, '--json', '--state-dir', stateDir], { cwd: repo, env });
  const receipt = JSON.parse(result.stdout || 'null');
  expect(receipt?.sandbox, result.stderr).toMatchObject({ retained: true });
  const uh = (...args: string[]) => runCli(args, { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
  return { cacheDir, operationId, receipt, uh };
}

const WRITES = 'echo x > w.txt && cat w.txt && echo y > added.txt && cat added.txt';

/** What the command can reach: no network, a private home, none of the caller's variables. */
const CONFINED = [
  'test -z "$UH_TEST_SECRET" && echo no-secret',
  'test ! -e "$HOME/secret.txt" && echo private-home',
  '(exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null && echo reached || echo no-network',
].join(' && ');

const LOOK = [
  'pwd',
  'cat README.md',
  'cat added.txt',
  'test ! -e docs/guide.md && echo guide-gone',
  'cat src/app.txt',
  'git status --short',
].join(' && ');

describe('uh sandbox enter', () => {
  it('shows a kept overlay sandbox as the mission left it, and what the command writes never reaches it', async () => {
    const { cacheDir, operationId, receipt, uh } = await keptMission('overlay');
    expect(receipt.sandbox.backend).toBe('overlay');
    const path = receipt.sandbox.path as string;
    // On the host the path is empty: the files are the upper layer over the base.
    expect(readdirSync(path)).toEqual([]);
    const list = await uh('sandbox', 'list', '--json');
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).sandboxes).toMatchObject([{ operation_id: operationId, backend: 'overlay', path }]);
    const upper = join(
      cacheDir,
      'sandboxes',
      '.uh',
      readdirSync(join(cacheDir, 'sandboxes', '.uh'))[0] as string,
      'upper',
    );
    const before = readdirSync(upper).sort();

    const look = await uh('sandbox', 'enter', operationId, '--', 'sh', '-c', LOOK);
    expect(look.code, look.stderr).toBe(0);
    expect(look.stdout.split('\n')).toEqual([
      path,
      '# demo',
      'more',
      'new',
      'guide-gone',
      'v1',
      ' M README.md',
      ' D docs/guide.md',
      '?? added.txt',
      '?? tool.sh',
      '',
    ]);
    // A program the agent wrote is found in the kept layer, and runs isolated like the rest.
    const tool = await uh('sandbox', 'enter', operationId, '--', './tool.sh');
    expect(tool.code, tool.stderr).toBe(0);
    expect(tool.stdout).toBe('tool-ran\n');

    // The command may write (a test run's caches); the kept upper layer never sees it.
    const write = await uh('sandbox', 'enter', operationId, '--', 'sh', '-c', WRITES);
    expect(write.code, write.stderr).toBe(0);
    expect(write.stdout).toBe('x\ny\n');
    expect(readdirSync(upper).sort()).toEqual(before);
    expect(readFileSync(join(upper, 'added.txt'), 'utf8')).toBe('new\n');
    expect(readFileSync(join(upper, 'README.md'), 'utf8')).toBe('# demo\nmore\n');
    const again = await uh('sandbox', 'enter', operationId, '--', 'sh', '-c', 'test ! -e w.txt && cat added.txt');
    expect(again.stdout).toBe('new\n');

    const code = await uh('sandbox', 'enter', operationId, '--', 'sh', '-c', 'exit 7');
    expect(code.code).toBe(7);
  });

  it.each(['overlay', 'worktree'] as const)(
    "runs the command (%s) isolated: no network, a private home, not the caller's environment",
    async (backend) => {
      const { cacheDir, operationId } = await keptMission(backend);
      const home = tempDir('uh-home-');
      created.push(home);
      writeFileSync(join(home, 'secret.txt'), 'hunter2\n');
      const env = { UH_CACHE_DIR: cacheDir, UH_TEST_SECRET: 'hunter2', HOME: home };
      const r = await runCli(['sandbox', 'enter', operationId, '--', 'bash', '-c', CONFINED], { cwd: repo, env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe('no-secret\nprivate-home\nno-network\n');
    },
  );

  it('runs the command in a kept worktree sandbox, at its path', async () => {
    const { operationId, receipt, uh } = await keptMission('worktree');
    expect(receipt.sandbox.backend).toBe('git-worktree');
    const look = await uh('sandbox', 'enter', operationId, '--', 'sh', '-c', 'pwd && cat added.txt');
    expect(look.code, look.stderr).toBe(0);
    expect(look.stdout).toBe(`${receipt.sandbox.path}\nnew\n`);
    const list = await uh('sandbox', 'list');
    expect(list.stdout).toContain(`${operationId}  git-worktree  until `);
  });

  it('no such kept sandbox, or no argument: exit 2 naming it, with the hint', async () => {
    const cacheDir = tempDir('uh-cache-');
    created.push(cacheDir);
    const uh = (...args: string[]) => runCli(args, { cwd: repo, env: { UH_CACHE_DIR: cacheDir } });
    const none = await uh('sandbox', 'enter', 'op-none', '--', 'true');
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/<sandbox>: no sandbox of operation or name op-none/);
    expect(none.stderr).toMatch(/uh sandbox list/);
    const missing = await uh('sandbox', 'enter');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/<operation\|name>: missing/);
    const empty = await uh('sandbox', 'list');
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe(`no kept sandboxes in ${cacheDir}\n`);
  });
});
