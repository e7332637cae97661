import { mkdtempSync, rmSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temp dir removed after the test file (register with `afterAll(cleanup)`). */
export function tempDir(prefix = 'uh-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/**
 * A temp dir outside /tmp (under /var/tmp), for what must stay visible inside a sandbox: its /tmp
 * is private, so a program or fake home placed under the host's /tmp is not there.
 */
export function hostTempDir(prefix = 'uh-test-'): string {
  return realpathSync(mkdtempSync(join('/var/tmp', prefix)));
}

export function removeDir(path: string): void {
  rmSync(path, { recursive: true, force: true });
}
