/**
 * The Action's "Set up uh" step (scripts/action-setup.sh) with npm replaced by a recorder on PATH:
 * a release tarball installs production dependencies only, a checkout builds once and is pruned
 * to them (what actions/cache keeps), a restored cache installs nothing.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { removeDir, tempDir } from '../support/temp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('scripts/action-setup.sh (npm replaced by a recorder on PATH)', () => {
  const setup = (files: string[]): string[] => {
    const dir = tempDir('uh-setup-');
    const action = join(dir, 'action');
    const bin = join(dir, 'bin');
    const log = join(dir, 'npm.log');
    for (const f of ['package.json', ...files]) {
      mkdirSync(dirname(join(action, f)), { recursive: true });
      writeFileSync(join(action, f), f === 'package.json' ? '{"version":"0.0.0"}' : '');
    }
    mkdirSync(bin);
    writeFileSync(join(bin, 'npm'), `#!/bin/sh\necho "$*" >> "${log}"\n`, { mode: 0o755 });
    execFileSync('bash', [join(ROOT, 'scripts/action-setup.sh')], {
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, GITHUB_ACTION_PATH: action },
      stdio: 'ignore',
    });
    const calls = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
    removeDir(dir);
    return calls;
  };

  it('a release tarball (dist/ built, no lock file): production dependencies only, no build, no scripts', () => {
    expect(setup(['dist/bundle/uh.cjs'])).toEqual([
      'install --omit=dev --no-package-lock --no-audit --no-fund --ignore-scripts',
    ]);
  });

  it('a source checkout: one build, then pruned to production dependencies (what the cache keeps)', () => {
    expect(setup(['package-lock.json'])).toEqual([
      'ci --no-audit --no-fund --ignore-scripts',
      'run build',
      'prune --omit=dev --no-audit --no-fund --ignore-scripts',
    ]);
  });

  it('restored from the cache (dist/ and node_modules/ present): nothing installed', () => {
    expect(setup(['dist/bundle/uh.cjs', 'node_modules/.keep'])).toEqual([]);
  });
});
