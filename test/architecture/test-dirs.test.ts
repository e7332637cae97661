/**
 * No test can reach the real uh cache or this checkout's state dir: every vitest project loads
 * test/support/test-dirs.setup.ts (a temp UH_CACHE_DIR per test file), and the run-wide global
 * setup fails the run when `~/.cache/uh` or `.harness/` changed anyway.
 */
import { utimesSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/config.js';
import { changes, fingerprint, guardedDirs } from '../support/test-dirs.global-setup.js';
import { removeDir, tempDir } from '../support/temp.js';
import config, { SETUP_FILES } from '../../vitest.config.js';

interface ProjectShape {
  test?: { name?: string; setupFiles?: string | string[] };
}

const projects = (config.test?.projects ?? []) as ProjectShape[];
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

describe('test cache and state dirs', () => {
  it('every vitest project loads the temp-dir setup file', () => {
    expect(projects.map((p) => p.test?.name)).toEqual(['unit', 'integration', 'real', 'host-sweep', 'overlay']);
    for (const p of projects) {
      expect([p.test?.setupFiles].flat(), String(p.test?.name)).toEqual(expect.arrayContaining(SETUP_FILES));
    }
  });

  it('the run-wide check of the real dirs is wired in', () => {
    expect([config.test?.globalSetup].flat()).toContain('test/support/test-dirs.global-setup.ts');
    expect(guardedDirs({})).toEqual([join(homedir(), '.cache', 'uh'), expect.stringMatching(/\/\.harness$/)]);
  });

  it('uh in this test process (and any child inheriting its environment) caches under a temp dir', () => {
    const cacheDir = loadConfig(process.env).core.cacheDir;
    expect(cacheDir.startsWith(tmpdir() + '/')).toBe(true);
    expect(cacheDir).not.toBe(join(homedir(), '.cache', 'uh'));
  });

  it('the run-wide check names an entry that appeared and a file that was rewritten', () => {
    const dir = tempDir('uh-guard-');
    dirs.push(dir);
    writeFileSync(join(dir, 'receipt.key'), 'a');
    const hourAgo = new Date(Date.now() - 3_600_000);
    for (const path of [join(dir, 'receipt.key'), dir]) utimesSync(path, hourAgo, hourAgo);
    const before = fingerprint(dir);
    expect(changes(before, fingerprint(dir))).toEqual([]);
    writeFileSync(join(dir, 'receipt.key'), 'b');
    writeFileSync(join(dir, 'mirror'), 'x');
    const want = [dir, join(dir, 'mirror'), join(dir, 'receipt.key')];
    expect(changes(before, fingerprint(dir)).sort()).toEqual(want.sort());
  });
});
