/**
 * When the resident uh refuses a run (src/producers/cli/resident/server.ts `refusalOf`, a table
 * in order) and how environments are compared (protocol.ts): a refused run runs in its own
 * process, so every reason here is one where serving it could differ from running it.
 */
import { describe, expect, it } from 'vitest';
import { differingNames, lineSplitter, type RunHello } from '../../src/producers/cli/resident/protocol.js';
import { newState, refusalOf, type ResidentOptions, type State } from '../../src/producers/cli/resident/server.js';

const env = { PATH: '/usr/bin', HOME: '/home/u', UH_CACHE_DIR: '/c' };
const options = {
  dir: '/c/daemon',
  build: 'b'.repeat(32),
  env,
  idleMs: 60_000,
  run: async () => 0,
  log: () => undefined,
} satisfies ResidentOptions;

function hello(patch: Partial<RunHello> = {}): RunHello {
  return {
    kind: 'run',
    v: 1,
    argv: ['mission', 'run', 'm.yaml'],
    cwd: '/',
    umask: 0o022,
    env,
    build: options.build,
    node: process.version,
    ...patch,
  };
}

function state(patch: Partial<State> = {}): State {
  return { ...newState(), ...patch };
}

describe('refusalOf', () => {
  it('serves a run of the same build, node and environment, in a directory that exists', () => {
    expect(refusalOf(hello(), options, state())).toBeNull();
  });

  it.each([
    ['stopping', hello(), options, state({ stopping: true }), 'the resident uh is stopping'],
    [
      'busy',
      hello(),
      options,
      state({ current: { argv: [], interrupt: () => undefined, done: Promise.resolve() } }),
      'serving another run',
    ],
    ['not from the bundle', hello(), { ...options, build: null }, state(), 'not started from the bundle'],
    ['another build', hello({ build: 'c'.repeat(32) }), options, state(), 'another build of uh'],
    ['another node', hello({ node: 'v18.0.0' }), options, state(), 'another node (v18.0.0'],
    ['a missing directory', hello({ cwd: '/no/such/dir' }), options, state(), 'the directory /no/such/dir'],
  ])('refuses when %s', (_name, h, o, s, reason) => {
    expect(refusalOf(h, o, s)).toContain(reason);
  });

  it('names the variables that differ, never their values, and at most eight of them', () => {
    const extra = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`V${i}`, `secret-${i}`]));
    const reason = refusalOf(hello({ env: { ...env, HOME: '/home/other', ...extra } }), options, state()) ?? '';
    expect(reason).toContain('the environment differs (HOME, V0, V1, V2, V3, V4, V5, V6, and 3 more)');
    expect(reason).not.toMatch(/secret|\/home\/other/);
  });
});

describe('differingNames', () => {
  it('compares every variable but those a shell sets per command or directory', () => {
    const a = { A: '1', B: '2', _: '/usr/bin/uh', PWD: '/x', OLDPWD: '/y', SHLVL: '2' };
    const b = { A: '1', C: '3', _: '/usr/bin/node', PWD: '/z', SHLVL: '3' };
    expect(differingNames(a, b)).toEqual(['B', 'C']);
    expect(differingNames(a, { ...a, A: '1 ' })).toEqual(['A']);
  });
});

describe('lineSplitter', () => {
  it('returns whole lines across chunks and refuses a line past its bound', () => {
    const split = lineSplitter(8);
    expect(split(Buffer.from('{"a"'))).toEqual([]);
    expect(split(Buffer.from(':1}\n{"b"'))).toEqual(['{"a":1}']);
    expect(split(Buffer.from(':2}\n'))).toEqual(['{"b":2}']);
    expect(() => split(Buffer.from('123456789'))).toThrow('a line longer than 8 bytes');
  });
});
