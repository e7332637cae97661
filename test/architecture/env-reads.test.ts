/**
 * Configuration is read once: `process.env` appears in src/ only in the config module, and in
 * the few places that pass a runtime's (or git's) environment through to its child, each marked
 * with an "env passthrough" comment on that line or the line above. Passthrough files are named
 * by file name, so moving them between folders keeps the allowlist true.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG_MODULE = 'src/shared/config.ts';
/** Where the environment is handed to a child process unchanged (see the comment at each place). */
const PASSTHROUGH_FILES = new Set(['git.ts', 'operation-run.ts', 'recover-runtime.ts', 'promotion-git.ts']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(e.name) ? [path] : [];
  });
}

function envReads(): string[] {
  const found: string[] = [];
  for (const path of sourceFiles(join(ROOT, 'src'))) {
    const file = relative(ROOT, path).split('\\').join('/');
    if (file === CONFIG_MODULE) continue;
    const lines = readFileSync(path, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (!line.includes('process.env')) return;
      const marked = /env passthrough/.test(line) || /env passthrough/.test(lines[i - 1] ?? '');
      if (PASSTHROUGH_FILES.has(basename(file)) && marked) return;
      found.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  return found;
}

describe('environment reads', () => {
  it('process.env is read only in the config module and at documented passthrough places', () => {
    expect(envReads()).toEqual([]);
  });

  it('the config module itself reads the environment (the check is not vacuous)', () => {
    expect(readFileSync(join(ROOT, CONFIG_MODULE), 'utf8')).toContain('process.env');
  });
});
