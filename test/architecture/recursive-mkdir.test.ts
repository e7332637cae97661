/**
 * No recursive mkdir of node's in src/ or bin/: it never returns when a parent exists but cannot
 * hold the child (a dangling symlink, /proc), so every `mkdir -p` goes through `makeDir`
 * (src/shared/fs/make-dir.ts; bin/uh.js has its own few lines, being plain CommonJS).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** `mkdirSync(…, { recursive: true })`, `mkdir(…, { …recursive: true })` in any of node's forms. */
const RECURSIVE_MKDIR = /\bmkdir(Sync)?\([^;]*?recursive:\s*true/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs|cjs)$/.test(e.name) ? [path] : [];
  });
}

function recursiveMkdirs(): string[] {
  const found: string[] = [];
  for (const path of [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'bin'))]) {
    const file = relative(ROOT, path);
    readFileSync(path, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (RECURSIVE_MKDIR.test(line) && !line.trim().startsWith('*')) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

describe('recursive mkdir', () => {
  it('src/ and bin/ make directories with makeDir, never with node recursive mkdir', () => {
    expect(recursiveMkdirs()).toEqual([]);
  });

  it('the pattern finds the form it forbids (the check is not vacuous)', () => {
    expect(RECURSIVE_MKDIR.test("mkdirSync(join(dir, 'x'), { recursive: true });")).toBe(true);
    expect(RECURSIVE_MKDIR.test('await mkdir(dir, { mode: 0o700, recursive: true })')).toBe(true);
    expect(RECURSIVE_MKDIR.test('makeDir(dir);')).toBe(false);
  });
});
