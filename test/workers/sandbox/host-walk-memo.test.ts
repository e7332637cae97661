import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hostWalkFile, memoisedWalk, stamp } from '../../../src/workers/sandbox/host-walk-memo.js';
import {
  findRootOnlyPaths,
  keepRootOnlyWalkWarm,
  rootOnlyPaths,
} from '../../../src/workers/sandbox/root-only-paths.js';
import { tempDir } from '../../support/temp.js';

/** A walk over `dir` (its entries' names) that counts its runs. */
function counted(dir: string) {
  let runs = 0;
  const walk = () => {
    runs += 1;
    const stamped = [dir, stamp(dir)] as const;
    return { value: readdirSync(dir).sort(), dirs: [stamped] };
  };
  const parse = (v: unknown) => (Array.isArray(v) ? (v as string[]) : null);
  return { walk, parse, runs: () => runs };
}

describe('host walks kept across processes (host-walk-memo.ts)', () => {
  it('the answer is reused for the same key while no directory it read changes, and walked again when one does', () => {
    const host = tempDir('uh-walk-host-');
    writeFileSync(join(host, 'a'), '');
    const file = hostWalkFile(tempDir('uh-walk-cache-'), 'names');
    const w = counted(host);
    const at = 1_000_000;
    expect(memoisedWalk(file, 'k', 30_000, w.parse, w.walk, at).value).toEqual(['a']);
    expect(memoisedWalk(file, 'k', 30_000, w.parse, w.walk, at + 1000)).toEqual({ value: ['a'], at });
    expect(w.runs()).toBe(1);
    writeFileSync(join(host, 'b'), '');
    expect(memoisedWalk(file, 'k', 30_000, w.parse, w.walk, at + 2000).value).toEqual(['a', 'b']);
    renameSync(join(host, 'b'), join(host, 'c'));
    expect(memoisedWalk(file, 'k', 30_000, w.parse, w.walk, at + 3000).value).toEqual(['a', 'c']);
    expect(w.runs()).toBe(3);
  });

  it('another key, an old answer, a clock gone back or a damaged file: walked again', () => {
    const host = tempDir('uh-walk-host-');
    const file = hostWalkFile(tempDir('uh-walk-cache-'), 'names');
    const w = counted(host);
    memoisedWalk(file, 'k', 30_000, w.parse, w.walk, 1_000_000);
    memoisedWalk(file, 'other', 30_000, w.parse, w.walk, 1_000_000);
    memoisedWalk(file, 'other', 30_000, w.parse, w.walk, 1_030_000);
    memoisedWalk(file, 'other', 30_000, w.parse, w.walk, 1_000_000);
    writeFileSync(file, '{"key":"other","at":1000000,"dirs":[],"value":');
    memoisedWalk(file, 'other', 30_000, w.parse, w.walk, 1_000_000);
    expect(w.runs()).toBe(5);
    // A value its parser refuses is no answer either.
    const refuse = () => null;
    writeFileSync(file, JSON.stringify({ key: 'k', at: 1_000_000, dirs: [], value: 'not a list' }));
    expect(memoisedWalk(file, 'k', 30_000, refuse, w.walk, 1_000_000).value).toEqual([]);
    expect(w.runs()).toBe(6);
  });

  it('a memo that cannot be written is no memo: the walk still answers', () => {
    const blocked = join(tempDir('uh-walk-cache-'), 'file');
    writeFileSync(blocked, '');
    const w = counted(tempDir('uh-walk-host-'));
    expect(memoisedWalk(hostWalkFile(blocked, 'names'), 'k', 30_000, w.parse, w.walk).value).toEqual([]);
    expect(memoisedWalk(hostWalkFile(blocked, 'names'), 'k', 30_000, w.parse, w.walk).value).toEqual([]);
    expect(w.runs()).toBe(2);
  });

  it('the root-only walk stamps every directory it reads, before it reads it', () => {
    const root = tempDir('uh-walk-root-');
    mkdirSync(join(root, 'etc/deep/er'), { recursive: true });
    writeFileSync(join(root, 'etc/deep/er/key'), '');
    chmodSync(join(root, 'etc/deep/er/key'), 0o600);
    const read: Array<readonly [string, string]> = [];
    findRootOnlyPaths([], [[join(root, 'etc'), Infinity]], 1000, read);
    expect(read.map(([d]) => d)).toEqual(['/', join(root, 'etc'), join(root, 'etc/deep'), join(root, 'etc/deep/er')]);
    expect(read.every(([d, s]) => s === stamp(d))).toBe(true);
  });
});

describe('a long-lived process keeps the root-only walk fresh while idle (keepRootOnlyWalkWarm)', () => {
  afterEach(() => {
    keepRootOnlyWalkWarm(0);
    vi.useRealTimers();
  });
  const walkedAt = (file: string) => (JSON.parse(readFileSync(file, 'utf8')) as { at: number }).at;

  it('walked again as its memo runs out, with no mission asking, until forMs after the last call', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const file = hostWalkFile(tempDir('uh-walk-cache-'), 'root-only');
    keepRootOnlyWalkWarm(90_000);
    const skip = [tempDir('uh-walk-skip-')]; // a key no other test's memo holds
    const first = Date.now();
    rootOnlyPaths(0, skip, first, file);
    expect(walkedAt(file)).toBe(first);
    vi.advanceTimersByTime(30_010);
    expect(walkedAt(file)).toBeGreaterThanOrEqual(first + 30_000); // refreshed, idle
    vi.advanceTimersByTime(30_000);
    const last = walkedAt(file);
    expect(last).toBeGreaterThanOrEqual(first + 60_000);
    vi.advanceTimersByTime(120_000); // past forMs: no more walks
    expect(walkedAt(file)).toBeLessThanOrEqual(first + 90_000 + 30_010);
    const settled = walkedAt(file);
    vi.advanceTimersByTime(60_000);
    expect(walkedAt(file)).toBe(settled);
  });

  it('off (a one-shot process): nothing walks between calls', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const file = hostWalkFile(tempDir('uh-walk-cache-'), 'root-only');
    const first = Date.now();
    rootOnlyPaths(0, [tempDir('uh-walk-skip-')], first, file);
    vi.advanceTimersByTime(120_000);
    expect(walkedAt(file)).toBe(first);
  });
});
