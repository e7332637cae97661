/**
 * A cross-process lock: an atomic `mkdir`, with an owner token inside (`<host> <pid> <random>`).
 * A lock whose owner is dead on this host is broken; waiting is bounded.
 *
 * Breaking and releasing compare before they delete: a waiter that found a stale lock removes it
 * only if the lock still holds the owner it judged dead, and it checks and deletes under a
 * short-lived breaker lock (`<lock>.break`), so two waiters breaking the same stale lock cannot
 * delete the lock the first of them has just taken. A holder releases only its own token.
 */
import { mkdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { UhError } from '../../shared/errors.js';

/** A breaker lock older than this was left by a process that died within the break: remove it. */
const BREAKER_STALE_MS = 10_000;
/** A lock dir without its owner file yet is being taken right now: young ones are alive. */
const UNNAMED_GRACE_MS = 10_000;

/**
 * What a waiter saw in the lock: its owner token, (no owner file yet) the dir's mtime, or
 * (an owner file it cannot read) `unreadable`, which counts as alive. Null once the lock is gone.
 */
function fingerprint(lockDir: string): string | null {
  try {
    return `owner:${readFileSync(join(lockDir, 'owner'), 'utf8')}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return 'unreadable';
    try {
      return `unnamed:${statSync(lockDir).mtimeMs}`;
    } catch {
      return null; // the lock is gone: just try again
    }
  }
}

function isStale(print: string): boolean {
  if (print === 'unreadable') return false;
  if (print.startsWith('unnamed:')) return Date.now() - Number(print.slice('unnamed:'.length)) >= UNNAMED_GRACE_MS;
  const [host, pidText] = print.slice('owner:'.length).split(' ');
  if (host !== hostname()) return false; // cannot tell: assume alive
  try {
    process.kill(Number(pidText), 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'EPERM';
  }
}

/**
 * Remove the lock only if it still shows `seen`; the check and the delete run under the breaker.
 * False when another waiter holds the breaker (wait, then look again).
 */
function breakIfUnchanged(lockDir: string, seen: string): boolean {
  const breaker = `${lockDir}.break`;
  try {
    mkdirSync(breaker);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    try {
      if (Date.now() - statSync(breaker).mtimeMs >= BREAKER_STALE_MS) rmdirSync(breaker);
    } catch {
      // someone else removed it
    }
    return false;
  }
  try {
    if (fingerprint(lockDir) === seen) rmSync(lockDir, { recursive: true, force: true });
  } finally {
    rmdirSync(breaker);
  }
  return true;
}

function tryTake(lockDir: string, token: string): boolean {
  try {
    mkdirSync(lockDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  }
  writeFileSync(join(lockDir, 'owner'), token);
  return true;
}

function release(lockDir: string, token: string): void {
  if (fingerprint(lockDir) === `owner:${token}`) rmSync(lockDir, { recursive: true, force: true });
}

export async function withFileLock<T>(lockDir: string, fn: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const token = `${hostname()} ${process.pid} ${randomBytes(6).toString('hex')}`;
  let wait = 5;
  while (!tryTake(lockDir, token)) {
    const seen = fingerprint(lockDir);
    if (seen === null) continue; // released just now
    if (isStale(seen) && breakIfUnchanged(lockDir, seen)) continue;
    if (Date.now() > deadline) {
      throw new UhError('sandbox', `timed out waiting for lock ${lockDir}`, {
        hint: 'another uh process holds it; if none is running, remove the lock directory',
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
