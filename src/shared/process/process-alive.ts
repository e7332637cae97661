/**
 * Whether the process that left a record (a lock token, an operation's worker) still runs. Only a
 * process of this host can be judged; another host's is taken as alive, so nothing it holds is
 * broken from here.
 */
import { hostname } from 'node:os';

export function processAlive(host: string, pid: number): boolean {
  if (host !== hostname()) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
