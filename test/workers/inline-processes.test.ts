/**
 * What a whole inline run costs in processes, once its repository is known (mirror, base facts,
 * a pooled sandbox): the runtime alone. A mission that adds files to a repository with an
 * ordinary `.gitignore`, and leaves ignored output behind, runs no git process from the ref's
 * resolution to the sandbox's return to the pool; its receipt names the new file only and its
 * patch is git's. Guards the per-mission figures of docs/benchmarks.md (issue 16). With the git
 * fast path off (`UH_GIT_FAST_PATH=0`, src/workers/git-path.ts) the same run asks git instead, and
 * its receipt and patch are the same.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MissionSchema } from '../../src/shared/contracts/mission.js';
import { runInline } from '../../src/workers/inline/run-inline.js';
import { makeRepo } from '../support/git-repo.js';
import { spawnCounts } from '../../src/shared/process/spawn-group.js';
import { spawned } from '../support/spawned.js';
import { removeDir, tempDir } from '../support/temp.js';
import { testSettings } from '../support/settings.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
let n = 0;

async function run(repo: string, cacheDir: string, stateDir: string, script: string, gitFastPath = true) {
  const mission = MissionSchema.parse({
    schema_version: 'uh.mission.v0',
    mission_id: 'm-processes',
    operation_id: `processes-${process.pid}-${++n}`,
    title: 'processes',
    objective: 'add a file',
    repository: { url: repo, ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['sh', '-c', script] } },
    scope: { allowed_change_globs: ['hello.txt'] },
    timeout_seconds: 60,
  });
  const out = await runInline(mission, {
    settings: testSettings({ stateDir, cacheDir, isolation: 'off', poolSize: 2, gitFastPath }),
  });
  if (out.kind !== 'ran') throw new Error(`not run: ${out.kind}`);
  return out;
}

describe('an inline run on a known repository', () => {
  it('adding a file, with ignored output left behind: one process (the runtime), no git at all', async () => {
    const repo = makeRepo({
      'README.md': '# demo\n',
      '.gitignore': '*.log\nnode_modules/\n/dist\n',
      'src/app.ts': 'export {};\n',
    });
    const cacheDir = tempDir('uh-inline-proc-cache-');
    const stateDir = tempDir('uh-inline-proc-state-');
    dirs.push(repo, cacheDir, stateDir);
    const script =
      'printf "hello\\n" > hello.txt; echo log > run.log; mkdir -p node_modules/x dist && echo y > node_modules/x/i.js && echo z > dist/out.js';
    await run(repo, cacheDir, stateDir, script); // the mirror, the base facts, the first sandbox
    await run(repo, cacheDir, stateDir, script); // a pooled sandbox, cleaned and pooled again

    const before = spawned();
    const out = await run(repo, cacheDir, stateDir, script);
    const after = spawned();
    expect({ git: after.git - before.git, all: after.all - before.all }).toEqual({ git: 0, all: 1 });
    expect(out.receipt).toMatchObject({
      status: 'completed',
      changed_files: [{ path: 'hello.txt', status: 'added' }],
      scope: { ok: true },
    });
    const patch = readFileSync(join(out.dir, 'diff.patch'), 'utf8');
    expect(patch).toBe(
      `diff --git a/hello.txt b/hello.txt\nnew file mode 100644\nindex ${'0'.repeat(40)}..${execFileSync('git', ['hash-object', '--stdin'], { input: 'hello\n' }).toString().trim()}\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hello\n`,
    );
  });
  it('with the fast path off, git lists (the changes and the ignored files), stages, diffs and resets; the same receipt and patch', async () => {
    const repo = makeRepo({ 'README.md': '# demo\n', '.gitignore': '*.log\n', 'src/app.ts': 'export {};\n' });
    const cacheDir = tempDir('uh-inline-slow-cache-');
    const stateDir = tempDir('uh-inline-slow-state-');
    dirs.push(repo, cacheDir, stateDir);
    const script = 'printf "hello\\n" > hello.txt; echo log > run.log';
    const fast = await run(repo, cacheDir, stateDir, script, true);
    await run(repo, cacheDir, stateDir, script, false); // a pooled sandbox, reset by git
    const count = (name: string) => spawnCounts()[`git ${name}`] ?? 0;
    const names = ['ls-files', 'update-index', 'add', 'diff-tree', 'read-tree', 'rev-parse'];
    const before = names.map(count);
    const slow = await run(repo, cacheDir, stateDir, script, false);
    const after = names.map(count);
    expect(after.map((c, i) => c - before[i]!)).toEqual([2, 1, 0, 1, 1, 1]);
    expect(slow.receipt.changed_files).toEqual(fast.receipt.changed_files);
    const facts = (r: typeof fast.receipt) => ({ digest: r.diff_digest, bytes: r.diff_bytes, tree: r.final_tree });
    expect(facts(slow.receipt)).toEqual(facts(fast.receipt));
    expect(readFileSync(join(slow.dir, 'diff.patch'))).toEqual(readFileSync(join(fast.dir, 'diff.patch')));
  });
});
