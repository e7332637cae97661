import { mkdtempSync, rmSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temp dir removed after the test file (register with `afterAll(cleanup)`). */
export function tempDir(prefix = 'uh-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

export function removeDir(path: string): void {
  rmSync(path, { recursive: true, force: true });
}
