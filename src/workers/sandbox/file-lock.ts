/**
 * A cross-process lock: an atomic `mkdir`, with the owner's pid inside. A lock whose owner is
 * dead on this host is broken; waiting is bounded.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { UhError } from '../../shared/errors.js';

function ownerAlive(lockDir: string): boolean {
  try {
    const [host, pidText] = readFileSync(join(lockDir, 'owner'), 'utf8').split(' ');
    if (host !== hostname()) return true; // cannot tell: assume alive
    process.kill(Number(pidText), 0);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EPERM') return true;
    if (code === 'ENOENT') {
      // The owner has made the directory but not yet written its name: young locks are alive.
      try {
        return Date.now() - statSync(lockDir).mtimeMs < 10_000;
      } catch {
        return false;
      }
    }
    return false;
  }
}

export async function withFileLock<T>(lockDir: string, fn: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let wait = 5;
  for (;;) {
    try {
      mkdirSync(lockDir);
      writeFileSync(join(lockDir, 'owner'), `${hostname()} ${process.pid}`);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (!ownerAlive(lockDir)) {
        rmSync(lockDir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new UhError('sandbox', `timed out waiting for lock ${lockDir}`, {
          hint: 'another uh process holds it; if none is running, remove the lock directory',
        });
      }
      await delay(wait);
      wait = Math.min(wait * 2, 100);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}
