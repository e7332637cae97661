/**
 * The CLI bundle (scripts/bundle.mjs, built by `npm test` before vitest runs): what bin/uh.js
 * relies on to start fast (docs/benchmarks.md "Start-up").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUNDLE = join(ROOT, 'dist/bundle/uh.cjs');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? sourceFiles(path) : /\.ts$/.test(e.name) ? [path] : [];
  });
}

describe('CLI bundle', () => {
  it('is pure ASCII, so bin/uh.js may read it as latin1', () => {
    const bytes = readFileSync(BUNDLE);
    const at = bytes.findIndex((b) => b > 0x7f);
    expect(at === -1 ? null : bytes.subarray(Math.max(0, at - 60), at + 20).toString('latin1')).toBeNull();
  });

  it("sets zod's mode before any module makes a schema (zod decides per schema, when it is made)", () => {
    const main = readFileSync(join(ROOT, 'src/producers/cli/main.ts'), 'utf8');
    const imports = [...main.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    expect(imports[0]).toBe('./zod-mode.js');
    // In the bundle, main's body runs zod-mode's z.config before it initialises the config module.
    const bundle = readFileSync(BUNDLE, 'latin1');
    const mode = bundle.indexOf('.config({jitless:true})');
    expect(mode).toBeGreaterThan(-1);
    expect(bundle.indexOf('init_config();', mode)).toBeGreaterThan(mode);
  });

  it('stubs zod fromJSONSchema, which no source file may use (the stub throws)', () => {
    const users = sourceFiles(join(ROOT, 'src')).filter((path) =>
      /\bfromJSONSchema\b/.test(readFileSync(path, 'utf8')),
    );
    expect(users.map((p) => relative(ROOT, p))).toEqual([]);
    expect(readFileSync(BUNDLE, 'latin1')).toContain('z.fromJSONSchema is not in the uh bundle');
  });
});
