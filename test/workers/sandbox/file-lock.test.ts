/**
 * The mirror lock across real processes: many node processes start at once against a stale lock
 * (its owner is a process that has exited) and each takes the lock a few times, logging entry and
 * exit inside the critical section. No two may ever hold it together.
 * Run against the code before the owner token (every waiter deleted what it judged stale), the
 * first test fails: two or more contenders hold the lock at once.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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

describe('withFileLock', () => {
  it('lets one process at a time in when many break a stale lock together', async () => {
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
    const lockDir = join(dir, 'mirror.lock');
    mkdirSync(lockDir);
    writeFileSync(join(lockDir, 'owner'), `${hostname()} ${deadPid()}`);
    // A stale lock with a tree in it takes a while to delete: waiters that judged it stale are
    // still deleting when the first of them takes the lock (the window the old code lost).
    for (let i = 0; i < 40; i++) {
      mkdirSync(join(lockDir, `d${i}`));
      for (let j = 0; j < 50; j++) writeFileSync(join(lockDir, `d${i}`, `f${j}`), '');
    }
    const log = join(dir, 'log');
    const readyDir = join(dir, 'ready');
    mkdirSync(readyDir);
    const go = join(dir, 'go');
    const processes = 12;
    const rounds = 3;

    const exits = Array.from({ length: processes }, () => {
      const child = spawn(process.execPath, [join(dir, 'contender.mjs'), lockDir, log, readyDir, go, String(rounds)], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      return new Promise<{ code: number | null; stderr: string }>((done) => child.on('close', (code) => done({ code, stderr })));
    });
    await until(() => readdirSync(readyDir).length === processes, 'every contender to start');
    writeFileSync(go, '');
    const results = await Promise.all(exits);
    const failures = results.filter((r) => r.code !== 0).map((r) => r.stderr.split('\n').find((l) => l.includes('Error')) ?? r.stderr);

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
    expect({ overlaps, failures }).toEqual({ overlaps: [], failures: [] });
    expect(lines).toHaveLength(processes * rounds * 2);
    expect(existsSync(lockDir)).toBe(false);
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
    await until(() => existsSync(join(lockDir, 'owner')), 'the owner file');
    releaseFirst();
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'second in']);
    expect(existsSync(lockDir)).toBe(false);
  });
});
