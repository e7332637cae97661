import { describe, expect, it } from 'vitest';
import { parseMission } from '../../src/shared/contracts/load-mission.js';
import { UhError } from '../../src/shared/errors.js';

const valid = () => ({
  schema_version: 'uh.mission.v0',
  mission_id: 'm1',
  operation_id: 'op-1',
  title: 'T',
  objective: 'Do it',
  repository: { url: '/tmp/repo', ref: 'main' },
  runtime: 'command',
  runtime_config_overrides: { command: { argv: ['true'] } },
  scope: { allowed_change_globs: ['src/**'], forbidden_globs: [] },
  verification: [{ name: 'test', argv: ['npm', 'test'], timeout_seconds: 60 }],
});

function problems(mutate: (m: any) => void): string[] {
  const m = valid();
  mutate(m);
  try {
    parseMission(m, '/tmp');
  } catch (error) {
    if (UhError.isInstance(error)) {
      expect(error.kind).toBe('invalid_input');
      return [...error.details];
    }
    throw error;
  }
  return [];
}

describe('uh.mission.v0', () => {
  it('accepts a valid mission and fills defaults', () => {
    const m = parseMission(valid(), '/tmp');
    expect(m.timeout_seconds).toBe(1800);
    expect(m.promotion).toBe('none');
    expect(m.sandbox.backend).toBe('git-worktree');
  });

  it('resolves a relative repository path against the mission folder', () => {
    const m = parseMission({ ...valid(), repository: { url: '../repo' } }, '/work/missions');
    expect(m.repository.url).toBe('/work/repo');
    expect(m.repository.ref).toBe('HEAD');
  });

  it('keeps git URLs as they are', () => {
    for (const url of ['https://example.invalid/r.git', 'git@example.invalid:o/r.git', 'ssh://git@h/r']) {
      expect(parseMission({ ...valid(), repository: { url } }, '/x').repository.url).toBe(url);
    }
  });

  it.each<[string, (m: any) => void, string]>([
    ['unknown top-level key', (m) => (m.objectve = 'typo'), 'objectve: unknown key'],
    ['unknown nested key', (m) => (m.scope.allowed_globs = ['x']), 'scope.allowed_globs: unknown key'],
    ['wrong schema version', (m) => (m.schema_version = 'uh.mission.v1'), 'schema_version'],
    ['wrong type', (m) => (m.timeout_seconds = '60'), 'timeout_seconds'],
    ['negative timeout', (m) => (m.timeout_seconds = -1), 'timeout_seconds'],
    ['bad mission id', (m) => (m.mission_id = 'has space'), 'mission_id: must match'],
    ['operation id with a colon', (m) => (m.operation_id = 'a:b'), 'operation_id: must match'],
    ['operation id starting with a dot', (m) => (m.operation_id = '.hidden'), 'operation_id: must match'],
    ['id too long', (m) => (m.operation_id = 'a'.repeat(129)), 'operation_id: must match'],
    ['missing objective', (m) => delete m.objective, 'objective'],
    ['missing repository', (m) => delete m.repository, 'repository'],
    ['check as a shell string', (m) => (m.verification[0].argv = 'npm test'), 'verification[0].argv'],
    [
      'check argv of one shell-looking string',
      (m) => (m.verification[0].argv = ['npm test && rm -rf /']),
      'verification[0].argv: looks like a shell string',
    ],
    ['empty check argv', (m) => (m.verification[0].argv = []), 'verification[0].argv'],
    [
      'duplicate check names',
      (m) => m.verification.push({ name: 'test', argv: ['true'] }),
      'verification[1].name: duplicate',
    ],
    [
      'absolute glob',
      (m) => (m.scope.allowed_change_globs = ['src/**', '/etc/**']),
      'scope.allowed_change_globs[1]: must be relative',
    ],
    [
      '.. glob',
      (m) => (m.scope.allowed_change_globs = ['src/**', 'ok', '../outside/**']),
      'scope.allowed_change_globs[2]: must not contain a ".." segment',
    ],
    ['.. in forbidden glob', (m) => (m.scope.forbidden_globs = ['a/../b']), 'scope.forbidden_globs[0]'],
    ['unknown capability', (m) => (m.requires = ['telepathy']), 'requires[0]'],
    [
      'overrides for a runtime not used',
      (m) => (m.runtime_config_overrides.codex = {}),
      'runtime_config_overrides.codex',
    ],
    ['bad promotion', (m) => (m.promotion = 'merge'), 'promotion'],
    ['bad sandbox backend', (m) => (m.sandbox = { backend: 'docker' }), 'sandbox.backend'],
    ['bad env name', (m) => (m.sandbox = { env: { 'BAD-NAME': 'x' } }), 'sandbox.env'],
    ['port range reversed', (m) => (m.sandbox = { port_range: [9000, 8000] }), 'sandbox.port_range'],
    ['empty runtime list', (m) => (m.runtime = []), 'runtime'],
  ])('%s', (_name, mutate, expected) => {
    const lines = problems(mutate);
    expect(lines.join('\n')).toContain(expected);
  });

  it('reports every problem at once, each with its path', () => {
    const lines = problems((m) => {
      m.objectve = 'x';
      m.mission_id = 'bad id';
      m.verification[0].argv = 'make test';
    });
    expect(lines.length).toBeGreaterThanOrEqual(3);
  });
});
