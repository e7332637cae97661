/**
 * Asks the resident uh of a cache dir for its status, or to stop (`uh daemon status|stop`,
 * `uh doctor`): one hello, its answers until it closes.
 */
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { frame, lineSplitter, PROTOCOL_VERSION, SOCKET_NAME } from './protocol.js';
import type { ResidentStatus } from './server.js';

/** `<cache dir>/daemon`: the resident uh's directory. */
export const residentDir = (cacheDir: string): string => join(cacheDir, 'daemon');

/** The answers to one hello, or null when no resident uh serves `cacheDir`. */
export function askResident(cacheDir: string, kind: 'status' | 'stop'): Promise<Array<Record<string, unknown>> | null> {
  return new Promise((resolve) => {
    const conn = createConnection(join(residentDir(cacheDir), SOCKET_NAME));
    const split = lineSplitter(1024 * 1024);
    const answers: Array<Record<string, unknown>> = [];
    conn.on('connect', () => conn.write(frame({ kind, v: PROTOCOL_VERSION })));
    conn.on('data', (chunk: Buffer) => {
      try {
        answers.push(...split(chunk).map((l) => JSON.parse(l) as Record<string, unknown>));
      } catch {
        conn.destroy();
      }
    });
    conn.on('error', () => resolve(null));
    conn.on('close', () => resolve(answers));
  });
}

/** The status of the resident uh of `cacheDir`, or null when none serves it. */
export async function residentStatus(cacheDir: string): Promise<ResidentStatus | null> {
  const status = (await askResident(cacheDir, 'status'))?.find((a) => a.kind === 'status');
  if (!status) return null;
  const { kind: _, ...rest } = status;
  return rest as unknown as ResidentStatus;
}
