/**
 * Ref resolution for a queue producer: concurrent submissions of one repository and ref share
 * one resolution, yet a ref moved afterwards resolves to its new commit (nothing stale kept).
 */
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mirrorFor, resolveInMirror } from '../../../src/workers/sandbox/mirror-cache.js';
import { spawnCounts } from '../../../src/shared/process/spawn-group.js';
import { git, makeRepo } from '../../support/git-repo.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const revParses = () => spawnCounts()['git rev-parse'] ?? 0;
const gitSpawns = () =>
  Object.entries(spawnCounts())
    .filter(([k]) => k.startsWith('git '))
    .reduce((n, [, v]) => n + v, 0);

describe('resolveInMirror', () => {
  it('50 concurrent callers share one resolution; a commit made afterwards is seen by the next call; a known SHA spawns nothing', async () => {
    const repo = makeRepo({ 'README.md': '# one\n' });
    const cacheDir = tempDir('uh-mirror-');
    dirs.push(repo, cacheDir);
    const first = await resolveInMirror(cacheDir, repo, 'main'); // clones the mirror
    expect(first.commit).toBe(git(repo, 'rev-parse', 'main').trim());

    // The clone stamped the mirror: the next resolution starts no git process (`main` itself is
    // read from the source's files, local-ref.ts; the commit is in the stamp).
    let before = gitSpawns();
    await resolveInMirror(cacheDir, repo, 'main');
    expect(gitSpawns() - before).toBe(0);

    // Without the stamp, one shared resolution runs one git process: the mirror's config check.
    // Fifty separate ones would run fifty.
    rmSync(mirrorFor(cacheDir, repo).path.replace(/\.git$/, '.verified.json'));
    before = gitSpawns();
    const all = await Promise.all(Array.from({ length: 50 }, () => resolveInMirror(cacheDir, repo, 'main')));
    expect(new Set(all.map((r) => r.commit))).toEqual(new Set([first.commit]));
    expect(gitSpawns() - before).toBe(1);

    writeFileSync(join(repo, 'README.md'), '# two\n');
    git(repo, 'commit', '-qam', 'two');
    const moved = await resolveInMirror(cacheDir, repo, 'main');
    expect(moved.commit).toBe(git(repo, 'rev-parse', 'main').trim());
    expect(moved.commit).not.toBe(first.commit);

    const quiet = revParses();
    const bySha = await resolveInMirror(cacheDir, repo, moved.commit, { signal: new AbortController().signal });
    expect(bySha.commit).toBe(moved.commit);
    expect(revParses()).toBe(quiet);
  });

  it('a mirror config verified once is not parsed again while its bytes stay the same; any change to it is parsed and a poisoned one is caught', async () => {
    const repo = makeRepo({ 'README.md': '# one\n' });
    const cacheDir = tempDir('uh-mirror-');
    dirs.push(repo, cacheDir);
    const configReads = () => spawnCounts()['git config'] ?? 0;
    const clones = () => spawnCounts()['git clone'] ?? 0;
    await resolveInMirror(cacheDir, repo, 'main'); // clones, parses the config, stamps it
    const quiet = configReads();
    await resolveInMirror(cacheDir, repo, 'main', { signal: new AbortController().signal });
    expect(configReads()).toBe(quiet);

    const mirror = mirrorFor(cacheDir, repo).path;
    appendFileSync(join(mirror, 'config'), '[core]\n\tfsmonitor = /bin/false\n');
    const before = clones();
    const again = await resolveInMirror(cacheDir, repo, 'main', { signal: new AbortController().signal });
    expect(again.commit).toBe(git(repo, 'rev-parse', 'main').trim());
    expect(clones()).toBe(before + 1); // discarded and cloned again
    expect(readFileSync(join(mirror, 'config'), 'utf8')).not.toContain('fsmonitor');
  });
});
