/**
 * `makeDir` ends where node's recursive mkdir spins forever (a parent that exists but answers
 * ENOENT for its child: a dangling symlink, /proc), and `uh` with its cache dir there exits 2
 * naming the directory instead of hanging at 100 % CPU. Each case runs in a child process with a
 * deadline, so a regression fails the test instead of freezing the test worker.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { makeDir } from '../../src/shared/fs/make-dir.js';
import { UH_BIN } from '../support/cli.js';
import { makeRepo } from '../support/git-repo.js';
import { writeMission } from '../support/mission-file.js';
import { removeDir, tempDir } from '../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
// The built module (`npm test` builds before it runs the tests): the child runs plain node.
const MODULE = fileURLToPath(new URL('../../dist/src/shared/fs/make-dir.js', import.meta.url));
const DEADLINE_MS = 20_000;

/** `makeDir(path)` in a child process, killed at the deadline: what it printed, or its status null. */
function makeDirInChild(path: string): { status: number | null; out: string } {
  const code = `import('${MODULE}').then((m) => { try { m.makeDir(${JSON.stringify(path)}); console.log('ok'); } catch (e) { console.log(e.kind ?? e.code, e.message); } })`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    encoding: 'utf8',
    timeout: DEADLINE_MS,
    killSignal: 'SIGKILL',
  });
  return { status: child.status, out: `${child.stdout}${child.stderr}` };
}

describe('makeDir', () => {
  const root = tempDir('uh-makedir-');
  dirs.push(root);

  it('makes missing parents with the mode asked for, and takes an existing directory as done', () => {
    const path = join(root, 'a/b/c');
    makeDir(path, 0o700);
    expect(statSync(path).isDirectory()).toBe(true);
    expect(statSync(join(root, 'a')).mode & 0o777).toBe(0o700);
    makeDir(path);
    expect(() => makeDir(join(root, 'a/b'))).not.toThrow();
  });

  it('a file on the way: the error node gives (not a hang)', () => {
    writeFileSync(join(root, 'file'), 'x');
    expect(() => makeDir(join(root, 'file/sub'))).toThrow(/ENOTDIR|EEXIST/);
    expect(() => makeDir(join(root, 'file'))).toThrow(/EEXIST/);
  });

  it.each([
    [
      'under a dangling symlink (a cache dir on a disk that is not mounted)',
      () => {
        symlinkSync(join(root, 'not-mounted'), join(root, 'dangling'));
        return {
          path: join(root, 'dangling/cache/mirrors'),
          says: `${join(root, 'dangling')}: it is a symlink to ${join(root, 'not-mounted')}, which does not exist`,
        };
      },
    ],
    [
      'under /proc',
      () => ({ path: '/proc/uh-no-such-dir/cache', says: '/proc/uh-no-such-dir: /proc exists but cannot hold it' }),
    ],
  ])('%s: fails at once with invalid_input naming the directory', (_name, where) => {
    const { path, says } = where();
    const { status, out } = makeDirInChild(path);
    expect(status, out).toBe(0);
    expect(out).toMatch(/^invalid_input cannot create directory /);
    expect(out).toContain(says);
  });
});

describe('uh with its cache dir under a dangling symlink', () => {
  it('exits 2 naming the directory, promptly, instead of spinning', () => {
    const base = tempDir('uh-makedir-cli-');
    dirs.push(base);
    symlinkSync(join(base, 'unmounted-disk'), join(base, 'cache-link'));
    mkdirSync(join(base, 'state'));
    const repo = makeRepo();
    dirs.push(repo);
    const { path } = writeMission(repo, ['--scenario', 'success']);
    const child = spawnSync(process.execPath, [UH_BIN, 'mission', 'run', path, '--state-dir', join(base, 'state')], {
      encoding: 'utf8',
      timeout: DEADLINE_MS,
      killSignal: 'SIGKILL', // a spinning uh never runs its SIGTERM handler
      env: { ...process.env, UH_LOG_LEVEL: 'silent', UH_CACHE_DIR: join(base, 'cache-link', 'uh') },
    });
    expect(child.signal, 'uh did not end before the deadline').toBeNull();
    expect(child.status, child.stderr).toBe(2);
    expect(child.stderr).toContain(
      `${join(base, 'cache-link')}: it is a symlink to ${join(base, 'unmounted-disk')}, which does not exist`,
    );
    expect(child.stderr).toContain('UH_CACHE_DIR');
  });
});
