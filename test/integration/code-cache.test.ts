/**
 * bin/uh.js compiles the bundled CLI through a V8 code cache under <cache dir>/code-cache/, one
 * file per command. What a user would notice: the cache is made once and then reused; a corrupt
 * or foreign cache never breaks a command (it is ignored and rewritten); an unwritable cache dir
 * only means no cache; and `uh` writes nothing into its installation, so a read-only install works.
 * Needs `npm run build` (dist/bundle).
 */
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Script } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, UH_BIN } from '../support/cli.js';
import { removeDir, tempDir } from '../support/temp.js';

const ROOT = join(UH_BIN, '../..');
const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function freshCacheDir(): string {
  const d = tempDir('uh-code-cache-');
  dirs.push(d);
  return d;
}

/** The one cache file of `uh mission run --help`, with its bytes and mtime. */
function missionRunCache(cacheDir: string): { path: string; bytes: Buffer; mtimeMs: number } {
  const names = readdirSync(join(cacheDir, 'code-cache')).filter((n) => n.endsWith('-mission-run-help.bin'));
  expect(names).toHaveLength(1);
  const path = join(cacheDir, 'code-cache', names[0] as string);
  return { path, bytes: readFileSync(path), mtimeMs: statSync(path).mtimeMs };
}

async function helpOk(cacheDir: string): Promise<string> {
  const r = await runCli(['mission', 'run', '--help'], { cwd: ROOT, env: { UH_CACHE_DIR: cacheDir } });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(r.stdout).toContain('usage: uh mission run');
  return r.stdout;
}

describe('the code cache of the CLI', () => {
  it('is written on the first run of a command and reused, not rewritten, by the next', async () => {
    const cacheDir = freshCacheDir();
    const first = await helpOk(cacheDir);
    const made = missionRunCache(cacheDir);
    expect(made.bytes.length).toBeGreaterThan(1000);
    expect(made.path).toMatch(new RegExp(`uh-[0-9a-f]{32}-${process.version}-${process.arch}-mission-run-help\\.bin$`));
    expect(await helpOk(cacheDir)).toBe(first);
    const again = missionRunCache(cacheDir);
    expect(again.mtimeMs).toBe(made.mtimeMs);
    expect(again.bytes.equals(made.bytes)).toBe(true);
    expect(readdirSync(join(cacheDir, 'code-cache')).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    // A real run of the command is not served the help run's cache: it gets its own.
    const real = await runCli(['mission', 'run', join(cacheDir, 'no-such-mission.yaml')], {
      cwd: ROOT,
      env: { UH_CACHE_DIR: cacheDir },
    });
    expect(real.code).toBe(2);
    expect(readdirSync(join(cacheDir, 'code-cache')).filter((n) => /-mission-run(-help)?\.bin$/.test(n))).toHaveLength(
      2,
    );
  }, 30_000);

  it('ignores a corrupt cache and a cache of another script, and rewrites both', async () => {
    const cacheDir = freshCacheDir();
    const expected = await helpOk(cacheDir);
    const { path } = missionRunCache(cacheDir);
    const foreign = new Script('globalThis.x = 1 + 1;').createCachedData();
    for (const bad of [Buffer.from('not a code cache at all'), foreign]) {
      writeFileSync(path, bad);
      expect(await helpOk(cacheDir)).toBe(expected);
      const rewritten = missionRunCache(cacheDir);
      expect(rewritten.bytes.equals(bad)).toBe(false);
      expect(rewritten.bytes.length).toBeGreaterThan(1000);
    }
  }, 30_000);

  it('runs with a cache dir it cannot create (no cache, same output)', async () => {
    const base = freshCacheDir();
    const file = join(base, 'a-file');
    writeFileSync(file, 'x');
    expect(await helpOk(join(file, 'cache'))).toContain('usage: uh mission run');
  }, 30_000);

  it('writes nothing into a read-only installation', async () => {
    const install = freshCacheDir();
    cpSync(join(ROOT, 'bin'), join(install, 'bin'), { recursive: true });
    mkdirSync(join(install, 'dist'));
    cpSync(join(ROOT, 'dist/bundle'), join(install, 'dist/bundle'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(install, 'package.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(install, 'node_modules'));
    const listing = () =>
      readdirSync(install, { recursive: true, encoding: 'utf8' })
        .filter((p) => !p.startsWith('node_modules'))
        .map((p) => `${relative(install, join(install, p))} ${statSync(join(install, p)).mtimeMs}`)
        .sort();
    const readOnly = ['dist/bundle', 'dist', 'bin', '.'];
    readOnly.forEach((p) => chmodSync(join(install, p), 0o555));
    const before = listing();
    const cacheDir = freshCacheDir();
    try {
      for (let i = 0; i < 2; i++) {
        const r = await runCliAt(join(install, 'bin/uh.js'), ['--version'], cacheDir);
        expect(r).toEqual({ code: 0, stdout: 'uh 0.1.0\n', stderr: '' });
      }
      expect(listing()).toEqual(before);
    } finally {
      readOnly.reverse().forEach((p) => chmodSync(join(install, p), 0o755));
    }
    expect(readdirSync(join(cacheDir, 'code-cache'))).toHaveLength(1);
  }, 30_000);
});

async function runCliAt(
  bin: string,
  args: string[],
  cacheDir: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: ROOT,
      env: { ...process.env, UH_LOG_LEVEL: 'silent', UH_CACHE_DIR: cacheDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
