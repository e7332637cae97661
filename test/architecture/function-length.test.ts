/**
 * Every function in src/ fits on a screen (about 80 lines): protocol runners, the pipeline, the
 * pool and the classifiers included. scripts/function-lengths.mjs lists the offenders.
 */
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script, no declaration file
import { longFunctions } from '../../scripts/function-lengths.mjs';

describe('function length', () => {
  it('no function in src/ is longer than 80 lines', () => {
    const found = (
      longFunctions(['src'], 80) as Array<{ file: string; line: number; name: string; lines: number }>
    ).map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`);
    expect(found).toEqual([]);
  });
});
