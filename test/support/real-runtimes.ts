/**
 * Where the real runtime CLIs installed by `scripts/install-real-runtimes.sh` live: one install of
 * test/real/runtimes/package-lock.json in `${UH_RUNTIMES_DIR:-.cache/runtimes}`. A missing binary
 * is an error (never a skip): the real-runtime tests must run in CI.
 */
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export function runtimesDir(): string {
  return process.env.UH_RUNTIMES_DIR ?? join(ROOT, '.cache', 'runtimes');
}

/** The installed binary of a real runtime, or a thrown error telling how to install it. */
export function realRuntimeBinary(name: string, bin: string = name): string {
  const path = join(runtimesDir(), 'node_modules', '.bin', bin);
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`real ${name} is not installed at ${path}: run "bash scripts/install-real-runtimes.sh" first`);
  }
  return path;
}
