/**
 * A child that was never started because the sandbox cannot show its program (program-paths.ts):
 * it looks to the caller like a spawn that failed (`spawnError` code `EUHHIDDEN`, the reason as its
 * message, also written to a file stderr), so every adapter ends its run the way it ends a program
 * that cannot start; the pipeline then reports the refusal itself (blocked, the path and the fix).
 */
import { appendFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import type { SpawnedGroup, SpawnGroupOptions } from '../../shared/process/spawn-group.js';
import type { ProgramRefusal } from './program-paths.js';

export const REFUSED_SPAWN_CODE = 'EUHHIDDEN';

function ended(): PassThrough {
  const stream = new PassThrough();
  stream.end();
  return stream;
}

export function refusedSpawn(options: SpawnGroupOptions, refusal: ProgramRefusal): SpawnedGroup {
  const message = `uh: ${refusal.message}; ${refusal.hint}`;
  if (options.stderr !== undefined && typeof options.stderr === 'object') {
    try {
      appendFileSync(options.stderr.file, `${message}\n`);
    } catch {
      // the log dir is gone: the spawn error still says it
    }
  }
  const stdin = options.stdin === 'pipe' ? new PassThrough() : null;
  stdin?.resume(); // writes are accepted and dropped, as by a child that exited
  return {
    pid: undefined,
    stdin,
    stdout: options.stdout === 'pipe' ? ended() : null,
    stderr: options.stderr === 'pipe' ? ended() : null,
    result: Promise.resolve({
      exitCode: null,
      signal: null,
      timedOut: false,
      aborted: false,
      durationMs: 0,
      spawnError: { code: REFUSED_SPAWN_CODE, message },
    }),
    terminate: () => undefined,
  };
}
