/**
 * uh's private index of an overlay sandbox is a hard link to its base's index (no copy per
 * sandbox): shared by every sandbox at the base, replaced (never written in place) when git
 * writes it, so the base's bytes and times stay as the proof expects. The agent's index is a
 * copy of its own. A changed base file is still refused: a new base is made.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GIT_PROCESSES } from '../../../src/workers/git-path.js';
import { resolveInMirror } from '../../../src/workers/sandbox/mirror-cache.js';
import { acquireBase, releaseBase } from '../../../src/workers/sandbox/overlay-base.js';
import { createOverlaySandbox, removeOverlaySandbox } from '../../../src/workers/sandbox/overlay-sandbox.js';
import { sandboxPaths } from '../../../src/workers/sandbox/worktree.js';
import { makeRepo } from '../../support/git-repo.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
const temp = (prefix: string) => {
  const dir = tempDir(prefix);
  dirs.push(dir);
  return dir;
};

describe("an overlay sandbox's index", () => {
  it("is the base's, linked; git writing one sandbox's replaces its link, never the base's", async () => {
    const files = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`d${i % 4}/f${i}.txt`, `${i}\n`]));
    const repo = makeRepo({ 'README.md': '# one\n', ...files }, temp('uh-ovl-idx-repo-'));
    const cacheDir = temp('uh-ovl-idx-cache-');
    const { mirror, commit } = await resolveInMirror(cacheDir, repo, 'HEAD', {}, GIT_PROCESSES);
    const one = await createOverlaySandbox(cacheDir, mirror, commit, 'op-one', new Date());
    const two = await createOverlaySandbox(cacheDir, mirror, commit, 'op-two', new Date());
    const baseIndex = statSync(one.base.index);
    expect(statSync(sandboxPaths(one.path).index).ino).toBe(baseIndex.ino);
    expect(statSync(sandboxPaths(two.path).index).ino).toBe(baseIndex.ino);
    // The agent's copy is its own file (it may write it in place).
    expect(statSync(join(one.layers.upper, '.git', 'index')).ino).not.toBe(baseIndex.ino);
    const before = readFileSync(one.base.index);
    // git rewriting uh's index of one sandbox (here: emptied) goes through index.lock and a rename.
    const { gitDir, index } = sandboxPaths(one.path);
    const emptied = spawnSync('git', ['--git-dir', gitDir, 'read-tree', '--empty'], {
      env: { ...process.env, GIT_INDEX_FILE: index },
    });
    expect(emptied.status, String(emptied.stderr)).toBe(0);
    expect(statSync(index).ino).not.toBe(baseIndex.ino);
    expect(readFileSync(one.base.index).equals(before)).toBe(true);
    expect(statSync(one.base.index).mtimeMs).toBe(baseIndex.mtimeMs);
    // The base still proves itself and is shared with the next sandbox.
    const three = await createOverlaySandbox(cacheDir, mirror, commit, 'op-three', new Date());
    expect([three.base.fresh, three.base.name]).toEqual([false, one.base.name]);
    // A base file rewritten in place (same size, so only its change time tells) is refused: a new base.
    await new Promise((r) => setTimeout(r, 50)); // past the checkout's timestamp tick
    writeFileSync(join(one.base.tree, 'README.md'), '# two\n');
    const reasons: string[] = [];
    const rebuilt = await acquireBase(cacheDir, mirror, commit, 'op-four-x', (_n, why) => reasons.push(why));
    expect(rebuilt.fresh).toBe(true);
    expect(rebuilt.name).not.toBe(one.base.name);
    expect(reasons.join()).toMatch(/README\.md/);
    for (const s of [one, two, three])
      await removeOverlaySandbox(cacheDir, { ...s, mirror: mirror.path, base: s.base.name });
    await releaseBase(cacheDir, rebuilt.name, 'op-four-x');
  }, 60_000);
});
