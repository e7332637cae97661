/**
 * One conformance test file and one doc page per registered runtime, read from the registry
 * (src/workers/runtimes/registry.ts), so registering a runtime without them fails here:
 * `test/conformance/<id>.conformance.test.ts` runs the conformance suite (which checks its
 * adapter is the one registered under that id), and `docs/runtimes/<id>.md` is the page the
 * errors about a runtime's config link to (`see docs/runtimes/<id>.md`). Neither folder holds a
 * file for an id nobody registered.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RUNTIME_IDS } from '../../src/workers/runtimes/registry.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const conformanceFile = (id: string) => join('test/conformance', `${id}.conformance.test.ts`);
const docPage = (id: string) => join('docs/runtimes', `${id}.md`);
const text = (rel: string) => (existsSync(join(ROOT, rel)) ? readFileSync(join(ROOT, rel), 'utf8') : null);

describe('every registered runtime has its conformance test and its doc page', () => {
  it('registers runtimes to check', () => {
    expect(RUNTIME_IDS.length).toBeGreaterThanOrEqual(9);
  });

  it.each(RUNTIME_IDS)('%s: test/conformance/<id>.conformance.test.ts runs the conformance suite', (id) => {
    const source = text(conformanceFile(id));
    expect(source, `${conformanceFile(id)} is missing`).not.toBeNull();
    expect(source).toContain("from './runtime-conformance.js'");
    expect(source).toMatch(/\bdescribeConformance\(/);
  });

  it.each(RUNTIME_IDS)('%s: docs/runtimes/<id>.md exists and names the runtime in its title', (id) => {
    const page = text(docPage(id));
    expect(page, `${docPage(id)} is missing`).not.toBeNull();
    expect(page?.split('\n')[0]).toMatch(new RegExp(`^# .*\`${id.replace(/[-]/g, '\\-')}\``));
  });

  it('no conformance test or doc page for an id that is not registered', () => {
    const ids = new Set(RUNTIME_IDS);
    const tests = readdirSync(join(ROOT, 'test/conformance')).filter((f) => f.endsWith('.conformance.test.ts'));
    const pages = readdirSync(join(ROOT, 'docs/runtimes')).filter((f) => f.endsWith('.md'));
    expect(tests.filter((f) => !ids.has(f.replace('.conformance.test.ts', '')))).toEqual([]);
    expect(pages.filter((f) => !ids.has(f.replace(/\.md$/, '')))).toEqual([]);
  });
});
