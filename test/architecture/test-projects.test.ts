/**
 * Every test file runs in exactly one vitest project (vitest.config.ts): `unit` and `real` are
 * lists, `integration` is the rest. Each entry of those lists still names a file, and the unit
 * project cannot reach a Redis, runs no bwrap and imports nothing that starts a child process.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import config, { OVERLAY, REAL, UNIT, UNIT_REDIS_URL, UNIT_SETUP } from '../../vitest.config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface ProjectShape {
  test?: {
    name?: string;
    include?: string[];
    exclude?: string[];
    env?: Record<string, string>;
    setupFiles?: string[];
    sequence?: { groupOrder?: number };
  };
}

function testFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'fixtures' ? [] : testFiles(path);
    return e.name.endsWith('.test.ts') ? [relative('.', path)] : [];
  });
}

const projects = (config.test?.projects ?? []) as ProjectShape[];
const files = [...testFiles('test'), ...testFiles('src')];

function projectsOf(file: string): string[] {
  return projects
    .filter((p) => picomatch.isMatch(file, p.test?.include ?? []) && !picomatch.isMatch(file, p.test?.exclude ?? []))
    .map((p) => String(p.test?.name));
}

describe('vitest projects', () => {
  it('each test file belongs to exactly one project, the overlay suites to one more', () => {
    expect(files.length).toBeGreaterThan(100);
    const want = (f: string) => (OVERLAY.includes(f) ? 2 : 1);
    const misplaced = files.map((f) => ({ f, in: projectsOf(f) })).filter((x) => x.in.length !== want(x.f));
    expect(misplaced).toEqual([]);
    expect(OVERLAY.every((f) => files.includes(f))).toBe(true);
  });

  it('the overlay project runs its suites with UH_SANDBOX_BACKEND=auto, after the others', () => {
    const overlay = projects.find((p) => p.test?.name === 'overlay');
    expect(overlay?.test?.env?.UH_SANDBOX_BACKEND).toBe('auto');
    expect(overlay?.test?.sequence?.groupOrder).toBe(1);
  });

  it('each entry of the unit and real lists names at least one test file', () => {
    const names = (glob: string) => glob.startsWith('src/') || files.some((f) => picomatch.isMatch(f, glob));
    const stale = [...UNIT, ...REAL].filter((glob) => !names(glob));
    expect(stale).toEqual([]);
  });

  it('the unit project points Redis at a closed port and puts a recording bwrap first on PATH', () => {
    const unit = projects.find((p) => p.test?.name === 'unit');
    expect(unit?.test?.env?.REDIS_URL).toBe(UNIT_REDIS_URL);
    expect(unit?.test?.setupFiles).toContain(UNIT_SETUP);
  });

  it('no unit test imports what starts a child process (git, the CLI, a fake agent) or reaches Redis', () => {
    const self = 'test/architecture/test-projects.test.ts'; // names the patterns, imports none of them
    const unit = files.filter((f) => projectsOf(f)[0] === 'unit' && f !== self);
    const spawner = new RegExp(
      [
        /from 'node:child_process'/,
        /\bspawnGroup\b/,
        /support\/(cli|worker-process|redis|operation-store|action-runner|git-repo|run-adapter|process-group)\.js'/,
        /fixtures\/bin\//,
      ]
        .map((r) => r.source)
        .join('|'),
    );
    expect(unit.filter((f) => spawner.test(readFileSync(join(ROOT, f), 'utf8')))).toEqual([]);
  });
});
