/**
 * A cross-process lock: a directory holding one token file, `free` or `held.<owner>`, taken and
 * given back by renaming the token (`free` → `held.<pid>.<random>.<host>` and back). A rename is
 * atomic and allocates nothing, so the lock costs no file created or deleted per use (on a busy
 * worker's ext4 each creation and deletion costs a millisecond and more of kernel time; a rename
 * a few microseconds). The first taker makes the directory (an atomic `mkdir`) and puts its held
 * token in it; the directory stays for the next.
 *
 * A lock whose owner is dead on this host is broken by renaming that very token back to `free`:
 * only one waiter's rename of it can succeed, and a token names one holding (a random part), so
 * no waiter can free a lock someone else has taken since. A waiter also meets:
 * - an empty directory: a first taker between its `mkdir` and its token; after a grace period
 *   (that taker died there) it is removed with `rmdir`, which fails if a token appeared;
 * - an `owner` file: the lock of an older uh (a directory per holding, the owner token inside),
 *   broken when its owner is dead by removing the directory under a short-lived breaker lock
 *   (`<lock>.break`), as that version did.
 * Waiting is bounded.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { UhError } from '../../shared/errors.js';
import { processAlive } from '../../shared/process/process-alive.js';

/** A breaker lock older than this was left by a process that died within the break: remove it. */
const BREAKER_STALE_MS = 10_000;
/** A lock dir without a token yet is being made right now: young ones are alive. */
const UNNAMED_GRACE_MS = 10_000;
const FREE = 'free';
const HELD = 'held.';

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code;

/** `held.<pid>.<random>.<host>` → its owner. */
function heldOwner(name: string): { host: string; pid: number } {
  const [pid, , ...host] = name.slice(HELD.length).split('.');
  return { host: decodeURIComponent(host.join('.')), pid: Number(pid) };
}

/** Take the lock by renaming its free token; make the lock first when there is none. */
function tryTake(lockDir: string, token: string): boolean {
  try {
    renameSync(join(lockDir, FREE), join(lockDir, token));
    return true;
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error;
  }
  try {
    mkdirSync(lockDir);
  } catch (error) {
    if (codeOf(error) === 'EEXIST') return false;
    throw error;
  }
  writeFileSync(join(lockDir, token), '');
  return true;
}

/**
 * Look at a lock we could not take and break it if its holder is dead. True when the caller
 * should try again at once (it was released or broken meanwhile), false to wait.
 */
function breakIfStale(lockDir: string): boolean {
  let names: string[];
  try {
    names = readdirSync(lockDir);
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return true;
    throw error;
  }
  const held = names.find((n) => n.startsWith(HELD));
  if (names.includes(FREE)) return true;
  if (held !== undefined) {
    const owner = heldOwner(held);
    if (processAlive(owner.host, owner.pid)) return false;
    try {
      renameSync(join(lockDir, held), join(lockDir, FREE));
    } catch {
      // another waiter broke it first
    }
    return true;
  }
  if (names.includes('owner')) return breakOldLock(lockDir);
  if (names.length === 0) return removeIfStillUnnamed(lockDir);
  return false;
}

function removeIfStillUnnamed(lockDir: string): boolean {
  try {
    if (Date.now() - statSync(lockDir).mtimeMs < UNNAMED_GRACE_MS) return false;
    rmdirSync(lockDir); // fails when a token appeared meanwhile
  } catch {
    // taken or removed meanwhile
  }
  return true;
}

/** An older uh's lock (`owner` inside): removed when its owner is dead, the check and the delete under the breaker. */
function breakOldLock(lockDir: string): boolean {
  let owner: string;
  try {
    owner = readFileSync(join(lockDir, 'owner'), 'utf8');
  } catch {
    return false;
  }
  const [host, pid] = owner.split(' ');
  if (processAlive(host ?? '', Number(pid))) return false;
  const breaker = `${lockDir}.break`;
  try {
    mkdirSync(breaker);
  } catch (error) {
    if (codeOf(error) !== 'EEXIST') throw error;
    try {
      if (Date.now() - statSync(breaker).mtimeMs >= BREAKER_STALE_MS) rmdirSync(breaker);
    } catch {
      // someone else removed it
    }
    return false;
  }
  try {
    if (readFileSync(join(lockDir, 'owner'), 'utf8') === owner) rmSync(lockDir, { recursive: true, force: true });
  } catch {
    // gone meanwhile
  } finally {
    rmdirSync(breaker);
  }
  return true;
}

function release(lockDir: string, token: string): void {
  try {
    renameSync(join(lockDir, token), join(lockDir, FREE));
  } catch (error) {
    if (codeOf(error) !== 'ENOENT') throw error; // the lock dir went with what it guarded (gc)
  }
}

export async function withFileLock<T>(lockDir: string, fn: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const token = `${HELD}${process.pid}.${randomBytes(6).toString('hex')}.${encodeURIComponent(hostname())}`;
  let wait = 1;
  while (!tryTake(lockDir, token)) {
    if (breakIfStale(lockDir)) continue;
    if (Date.now() > deadline) {
      throw new UhError('sandbox', `timed out waiting for lock ${lockDir}`, {
        hint: 'another uh process holds it (its pid is in the name of the held.* file inside); if none is running, remove the lock directory',
      });
    }
    await delay(wait);
    wait = Math.min(wait * 2, 100);
  }
  try {
    return await fn();
  } finally {
    release(lockDir, token);
  }
}
