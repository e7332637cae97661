/**
 * The head commit the receipt reports is read from the agent's own `.git` without running git:
 * a hostile HEAD (a FIFO, a huge file, a symlink out, a ref name that climbs out) gives null and
 * never hangs; a detached HEAD, a branch and a packed branch give their commit.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readAgentHead } from '../../../src/workers/verification/agent-head.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

function gitDir(files: Record<string, string>): string {
  const root = tempDir('uh-head-');
  dirs.push(root);
  const dir = join(root, '.git');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe('readAgentHead', () => {
  it.each([
    ['a detached HEAD', { HEAD: `${A}\n` }, A],
    ['a branch', { HEAD: 'ref: refs/heads/main\n', 'refs/heads/main': `${B}\n` }, B],
    [
      'a packed branch',
      { HEAD: 'ref: refs/heads/main\n', 'packed-refs': `# pack-refs with: peeled\n${B} refs/heads/main\n` },
      B,
    ],
    ['an unborn branch', { HEAD: 'ref: refs/heads/none\n' }, null],
    ['a ref name that climbs out', { HEAD: 'ref: refs/../../../etc/passwd\n' }, null],
    ['a ref outside refs/', { HEAD: 'ref: config\n', config: `${A}\n` }, null],
    ['junk', { HEAD: 'hello\n' }, null],
    ['a HEAD over 4 KiB', { HEAD: `${A}\n${' '.repeat(5000)}` }, null],
    [
      'a loop of symbolic refs',
      { HEAD: 'ref: refs/heads/a\n', 'refs/heads/a': 'ref: refs/heads/b\n', 'refs/heads/b': 'ref: refs/heads/a\n' },
      null,
    ],
  ])('%s', (_what, files, expected) => {
    expect(readAgentHead(gitDir(files))).toBe(expected);
  });

  it('a FIFO as HEAD gives null at once (no blocking read)', () => {
    const dir = gitDir({});
    execFileSync('mkfifo', [join(dir, 'HEAD')]);
    expect(readAgentHead(dir)).toBeNull();
  });

  it('a HEAD or ref symlinked out of the git dir gives null', () => {
    const outside = gitDir({ HEAD: `${A}\n` });
    const dir = gitDir({ HEAD: 'ref: refs/heads/main\n' });
    mkdirSync(join(dir, 'refs'), { recursive: true });
    symlinkSync(join(outside, 'HEAD'), join(dir, 'refs', 'main-link'));
    writeFileSync(join(dir, 'HEAD'), 'ref: refs/main-link\n');
    expect(readAgentHead(dir)).toBeNull();
    const linked = gitDir({});
    symlinkSync(join(outside, 'HEAD'), join(linked, 'HEAD'));
    expect(readAgentHead(linked)).toBeNull();
  });

  it('a .git that is a file (gitfile) gives null', () => {
    const root = tempDir('uh-head-');
    dirs.push(root);
    writeFileSync(join(root, '.git'), `gitdir: /elsewhere\n`);
    expect(readAgentHead(join(root, '.git'))).toBeNull();
  });
});
