import { spawnCounts } from '../../src/shared/process/spawn-group.js';

/** Processes this test process started through spawnGroup so far: git ones, and all. */
export function spawned(): { git: number; all: number } {
  const counts = Object.entries(spawnCounts());
  return {
    git: counts.filter(([k]) => k.startsWith('git ')).reduce((s, [, v]) => s + v, 0),
    all: counts.reduce((s, [, v]) => s + v, 0),
  };
}

/** git processes started so far (`spawned().git`). */
export const gitProcesses = (): number => spawned().git;

/** A small deterministic generator in [0, 1): the same cases on every run. */
export function seeded(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}
