/**
 * Loaded before every test file of the `unit` project (vitest.config.ts): a `bwrap` that only
 * records its calls goes first on PATH, and a file whose tests ran it fails. Redis is kept out
 * by the project's REDIS_URL (a closed port).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { removeDir, tempDir } from './temp.js';

export const NO_BWRAP_DIR = fileURLToPath(new URL('../fixtures/bin/no-bwrap', import.meta.url));

const dir = tempDir('uh-unit-bwrap-');
const calls = join(dir, 'calls');
process.env.PATH = `${NO_BWRAP_DIR}:${process.env.PATH ?? ''}`;
process.env.UNIT_BWRAP_CALLS = calls;

afterAll(() => {
  const made = existsSync(calls) ? readFileSync(calls, 'utf8').trim() : '';
  removeDir(dir);
  if (made) {
    throw new Error(`a unit test ran bwrap (${made.split('\n')[0]}): move its file out of UNIT in vitest.config.ts`);
  }
});
