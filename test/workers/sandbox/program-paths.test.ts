/**
 * program-paths.ts on a real tree (no bwrap): which read-only binds a program needs, and that a
 * bind never holds a secret location or a mask's root, whatever the install layout.
 */
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  bindCandidates,
  exposeArgv,
  sandboxView,
  secretLocations,
  shebangProgram,
} from '../../../src/workers/sandbox/program-paths.js';
import { hostTempDir, removeDir } from '../../support/temp.js';

const home = hostTempDir('uh-pp-home-');
afterAll(() => removeDir(home));

function put(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, 0o755);
}

const view = () => sandboxView([home], [], secretLocations(home, []));

describe('program paths', () => {
  it('a program right in the home binds only itself, never the home that holds ~/.ssh', () => {
    put(join(home, 'tool'), '#!/bin/sh\n');
    const out = exposeArgv([join(home, 'tool')], '/', '/usr/bin:/bin', view());
    expect(out.refusal).toBeNull();
    expect(out.readable).toEqual([join(home, 'tool')]);
  });

  it('an npm --prefix ~/.local install binds its node_modules, not ~/.local (it holds ~/.local/share/keyrings)', () => {
    put(join(home, '.local/lib/node_modules/pkg/cli.js'), '#!/bin/sh\n');
    mkdirSync(join(home, '.local/bin'), { recursive: true });
    symlinkSync('../lib/node_modules/pkg/cli.js', join(home, '.local/bin/pkg'));
    const out = exposeArgv(['pkg'], '/', `${join(home, '.local/bin')}:/usr/bin`, view());
    expect(out.readable).toEqual([join(home, '.local/bin'), join(home, '.local/lib/node_modules')]);
  });

  it('a program in ~/.ssh is refused, naming it', () => {
    put(join(home, '.ssh/run'), '#!/bin/sh\n');
    const out = exposeArgv([join(home, '.ssh/run')], '/', '/usr/bin', view());
    expect(out.refusal?.path).toBe(join(home, '.ssh/run'));
  });

  it('/tmp itself as an argument is not refused (the sandbox has its own /tmp)', () => {
    expect(exposeArgv(['ls', '/tmp'], '/', '/usr/bin:/bin', view()).refusal).toBeNull();
  });

  it.each([
    ['#!/usr/bin/env node\n', 'node'],
    ['#!/usr/bin/env -S node --no-warnings\n', 'node'],
    ['#!/bin/sh -e\n', '/bin/sh'],
    ['plain text\n', null],
  ])('shebang %j names %s', (line, expected) => {
    const file = join(home, `s-${Math.random()}`);
    put(file, line);
    expect(shebangProgram(file)).toBe(expected);
  });

  it('bind candidates go from the install prefix down to the file', () => {
    expect(bindCandidates('/p/lib/node_modules/a/cli.js')).toEqual([
      '/p',
      '/p/lib/node_modules',
      '/p/lib/node_modules/a',
      '/p/lib/node_modules/a/cli.js',
    ]);
  });
});
