/**
 * The mirror lock across real processes: many node processes start at once against a stale lock
 * (its owner is a process that has exited: an older uh's lock dir with an `owner` file, or a
 * `held.*` token) and each takes the lock a few times, logging entry and exit inside the critical
 * section. No two may ever hold it together.
 * Run against the code before the owner token (every waiter deleted what it judged stale), the
 * first test fails: two or more contenders hold the lock at once.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { buildSync } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { withFileLock } from '../../../src/workers/sandbox/file-lock.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const CONTENDER = `
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { withFileLock } from './file-lock.mjs';
const [lockDir, log, readyDir, go, rounds] = process.argv.slice(2);
writeFileSync(readyDir + '/' + process.pid, '');
while (!existsSync(go)) await new Promise((r) => setTimeout(r, 1));
for (let i = 0; i < Number(rounds); i++) {
  await withFileLock(lockDir, async () => {
    appendFileSync(log, 'enter ' + process.pid + '\\n');
    await new Promise((r) => setTimeout(r, 3));
    appendFileSync(log, 'exit ' + process.pid + '\\n');
  }, 60_000);
}
`;

function deadPid(): number {
  const done = spawnSync(process.execPath, ['-e', '']);
  return done.pid;
}

async function until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Many contender processes, each taking the lock `rounds` times; the overlaps seen in their log. */
async function contend(dir: string, lockDir: string, processes: number, rounds: number) {
  const log = join(dir, 'log');
  const readyDir = join(dir, 'ready');
  mkdirSync(readyDir);
  const go = join(dir, 'go');
  const exits = Array.from({ length: processes }, () => {
    const child = spawn(process.execPath, [join(dir, 'contender.mjs'), lockDir, log, readyDir, go, String(rounds)], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise<{ code: number | null; stderr: string }>((done) =>
      child.on('close', (code) => done({ code, stderr })),
    );
  });
  await until(() => readdirSync(readyDir).length === processes, 'every contender to start');
  writeFileSync(go, '');
  const results = await Promise.all(exits);
  const failures = results
    .filter((r) => r.code !== 0)
    .map((r) => r.stderr.split('\n').find((l) => l.includes('Error')) ?? r.stderr);
  const lines = readFileSync(log, 'utf8').trim().split('\n');
  let holder: string | null = null;
  const overlaps: string[] = [];
  for (const line of lines) {
    const [what, pid] = line.split(' ');
    if (what === 'enter') {
      if (holder !== null) overlaps.push(`${pid} entered while ${holder} held the lock`);
      holder = pid ?? null;
    } else {
      if (holder !== pid) overlaps.push(`${pid} left while ${holder} held the lock`);
      holder = null;
    }
  }
  return { overlaps, failures, lines };
}

function contenderDir(): string {
  const dir = tempDir('uh-lock-');
  dirs.push(dir);
  buildSync({
    entryPoints: [resolve('src/workers/sandbox/file-lock.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: join(dir, 'file-lock.mjs'),
    logLevel: 'silent',
  });
  writeFileSync(join(dir, 'contender.mjs'), CONTENDER);
  return dir;
}

describe('withFileLock', () => {
  it('lets one process at a time in when many break a stale lock of this version together (a held token of a dead process)', async () => {
    const dir = contenderDir();
    const lockDir = join(dir, 'mirror.lock');
    mkdirSync(lockDir);
    writeFileSync(join(lockDir, `held.${deadPid()}.0123456789ab.${encodeURIComponent(hostname())}`), '');
    const { overlaps, failures, lines } = await contend(dir, lockDir, 12, 3);
    expect({ overlaps, failures }).toEqual({ overlaps: [], failures: [] });
    expect(lines).toHaveLength(12 * 3 * 2);
    expect(readdirSync(lockDir)).toEqual(['free']);
  });

  it('lets one process at a time in when many break a stale lock of an older uh together', async () => {
    const dir = contenderDir();
    const lockDir = join(dir, 'mirror.lock');
    mkdirSync(lockDir);
    writeFileSync(join(lockDir, 'owner'), `${hostname()} ${deadPid()}`);
    // A stale lock with a tree in it takes a while to delete: waiters that judged it stale are
    // still deleting when the first of them takes the lock (the window the old code lost).
    for (let i = 0; i < 40; i++) {
      mkdirSync(join(lockDir, `d${i}`));
      for (let j = 0; j < 50; j++) writeFileSync(join(lockDir, `d${i}`, `f${j}`), '');
    }
    const { overlaps, failures, lines } = await contend(dir, lockDir, 12, 3);
    expect({ overlaps, failures }).toEqual({ overlaps: [], failures: [] });
    expect(lines).toHaveLength(12 * 3 * 2);
    expect(readdirSync(lockDir)).toEqual(['free']);
  });

  it('waits for a live holder in the same process', async () => {
    const dir = tempDir('uh-lock-');
    dirs.push(dir);
    const lockDir = join(dir, 'mirror.lock');
    const order: string[] = [];
    let releaseFirst!: () => void;
    const first = withFileLock(lockDir, async () => {
      order.push('first in');
      await new Promise<void>((r) => (releaseFirst = r));
      order.push('first out');
    });
    await until(() => order.length === 1, 'the first holder');
    const second = withFileLock(lockDir, async () => {
      order.push('second in');
    });
    await until(() => readdirSync(lockDir).some((n) => n.startsWith(`held.${process.pid}.`)), 'the held token');
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'second in']);
    expect(readdirSync(lockDir)).toEqual(['free']);
  });

  it('creates no file per use once made: the same token file is renamed held and back (its inode stays)', async () => {
    const dir = tempDir('uh-lock-');
    dirs.push(dir);
    const lockDir = join(dir, 'pool.lock');
    await withFileLock(lockDir, async () => undefined);
    const inode = statSync(join(lockDir, 'free')).ino;
    for (let i = 0; i < 5; i++) {
      await withFileLock(lockDir, async () => {
        const [held] = readdirSync(lockDir);
        expect(held).toMatch(new RegExp(`^held\\.${process.pid}\\.[0-9a-f]{12}\\.`));
        expect(statSync(join(lockDir, held as string)).ino).toBe(inode);
      });
    }
    expect(readdirSync(lockDir)).toEqual(['free']);
    expect(statSync(join(lockDir, 'free')).ino).toBe(inode);
  });

  it('a lock held by a live process of another host is never broken: the wait times out, naming the lock', async () => {
    const dir = tempDir('uh-lock-');
    dirs.push(dir);
    const lockDir = join(dir, 'pool.lock');
    mkdirSync(lockDir);
    writeFileSync(join(lockDir, `held.1.0123456789ab.${encodeURIComponent('other.host.example')}`), '');
    await expect(withFileLock(lockDir, async () => undefined, 200)).rejects.toThrow(
      `timed out waiting for lock ${lockDir}`,
    );
    expect(readdirSync(lockDir)).toEqual(['held.1.0123456789ab.other.host.example']);
  });
});
