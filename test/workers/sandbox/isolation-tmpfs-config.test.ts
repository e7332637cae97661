/**
 * `UH_ISOLATION_TMPFS_BYTES`, parsed once with the rest of the configuration: the size cap of an
 * isolated process's private /tmp and home. A bad value is an error naming the variable (exit 2).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/shared/config.js';

describe('UH_ISOLATION_TMPFS_BYTES', () => {
  it('defaults to 1 GiB and takes a byte count', () => {
    expect(loadConfig({}).core.isolationTmpfsBytes).toBe(1024 ** 3);
    expect(loadConfig({ UH_ISOLATION_TMPFS_BYTES: '67108864' }).core.isolationTmpfsBytes).toBe(64 * 1024 * 1024);
  });

  it.each([
    ['1024', 'at least 1048576'],
    ['1500000.5', 'int'],
    ['1e20', 'Too big'],
    ['lots', 'number'],
  ])('%s is refused, naming the variable and why', (value, why) => {
    expect(() => loadConfig({ UH_ISOLATION_TMPFS_BYTES: value })).toThrow(
      expect.objectContaining({
        details: expect.arrayContaining([
          expect.stringMatching(new RegExp(`\\(environment UH_ISOLATION_TMPFS_BYTES\\): .*${why}`)),
        ]),
      }),
    );
  });
});
