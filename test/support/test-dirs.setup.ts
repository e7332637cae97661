/**
 * Loaded before every test file of every project (vitest.config.ts `setupFiles`): uh's cache
 * goes to a temp dir of this file's own, so neither the test process nor a child it starts with
 * the inherited environment (the CLI, a worker) can reach the real `~/.cache/uh`. A test that
 * needs its own cache still sets UH_CACHE_DIR for its child, which wins over this one.
 */
import { afterAll } from 'vitest';
import { removeDir, tempDir } from './temp.js';

const cache = tempDir('uh-test-cache-');
process.env.UH_CACHE_DIR = cache;
afterAll(() => removeDir(cache));
