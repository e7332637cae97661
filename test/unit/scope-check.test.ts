import { describe, expect, it } from 'vitest';
import { checkScope } from '../../src/workers/verification/scope-check.js';
import { parseNameStatusZ } from '../../src/workers/verification/parse-name-status.js';
import type { ChangedFile } from '../../src/shared/contracts/receipt.js';

const rules = (allowed: string[], forbidden: string[] = []) => ({
  allowed_change_globs: allowed,
  forbidden_globs: forbidden,
});

describe('checkScope', () => {
  it.each<[string, ChangedFile[], ReturnType<typeof rules>, Array<{ path: string; reason: string }>]>([
    ['inside allowed', [{ path: 'src/a.ts', status: 'modified' }], rules(['src/**']), []],
    [
      'outside allowed',
      [{ path: 'README.md', status: 'modified' }],
      rules(['src/**']),
      [{ path: 'README.md', reason: 'outside_allowed' }],
    ],
    [
      'forbidden wins over allowed',
      [{ path: 'src/secret.env', status: 'added' }],
      rules(['src/**'], ['**/*.env']),
      [{ path: 'src/secret.env', reason: 'forbidden' }],
    ],
    [
      'deletion is checked on its path',
      [{ path: 'docs/x.md', status: 'deleted' }],
      rules(['src/**']),
      [{ path: 'docs/x.md', reason: 'outside_allowed' }],
    ],
    [
      'rename checks the old path too',
      [{ path: 'src/new.ts', from: 'lib/old.ts', status: 'renamed' }],
      rules(['src/**']),
      [{ path: 'lib/old.ts', reason: 'outside_allowed' }],
    ],
    [
      'rename checks the new path too',
      [{ path: 'lib/new.ts', from: 'src/old.ts', status: 'renamed' }],
      rules(['src/**']),
      [{ path: 'lib/new.ts', reason: 'outside_allowed' }],
    ],
    ['dotfiles match **', [{ path: '.github/workflows/ci.yml', status: 'added' }], rules(['**']), []],
    [
      'forbidden dotfile',
      [{ path: '.env', status: 'added' }],
      rules(['**'], ['.env']),
      [{ path: '.env', reason: 'forbidden' }],
    ],
    ['no changes, no violations', [], rules(['src/**']), []],
  ])('%s', (_name, changes, r, expected) => {
    expect(checkScope(changes, r).map(({ path, reason }) => ({ path, reason }))).toEqual(expected);
  });
});

describe('parseNameStatusZ', () => {
  it.each([
    [
      'modified and added',
      'M\0a.txt\0A\0b.txt\0',
      [
        { path: 'a.txt', status: 'modified' },
        { path: 'b.txt', status: 'added' },
      ],
    ],
    [
      'rename with score',
      'R087\0old name.txt\0new name.txt\0',
      [{ path: 'new name.txt', status: 'renamed', from: 'old name.txt' }],
    ],
    ['deleted', 'D\0gone.md\0', [{ path: 'gone.md', status: 'deleted' }]],
    ['type change', 'T\0link\0', [{ path: 'link', status: 'type_changed' }]],
    ['empty', '', []],
  ])('%s', (_name, out, expected) => {
    expect(parseNameStatusZ(out)).toEqual(expected);
  });
});
