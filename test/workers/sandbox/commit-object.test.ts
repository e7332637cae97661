/**
 * The pack and loose-object reader behind the JS ref path, against git's own account of a real
 * repository: after an aggressive repack (commits stored whole and as deltas), every object's
 * answer is "true" exactly for a commit stored whole (`git verify-pack -v`), and never for a tree,
 * a blob, a tag or a delta; a loose commit is read too, and a pack that no longer matches its
 * index is refused.
 */
import { readdirSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isCommitObject } from '../../../src/workers/sandbox/commit-object.js';
import { git, makeRepo } from '../../support/git-repo.js';
import { removeDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

/** id → [type, stored as a delta] for every object of the repository's one pack. */
function packContents(dir: string): Map<string, [string, boolean]> {
  const pack = join(dir, '.git', 'objects', 'pack');
  const idx = readdirSync(pack).filter((n) => n.endsWith('.idx'));
  expect(idx).toHaveLength(1);
  const contents = new Map<string, [string, boolean]>();
  for (const line of git(dir, 'verify-pack', '-v', join(pack, idx[0] as string)).split('\n')) {
    const fields = line.split(/\s+/);
    // "<id> <type> <size> <size-in-pack> <offset> [<depth> <base>]"
    if (/^[0-9a-f]{40}$/.test(fields[0] ?? '') && fields.length >= 5)
      contents.set(fields[0] as string, [fields[1] as string, fields.length > 5]);
  }
  return contents;
}

describe('isCommitObject', () => {
  it('in an aggressively repacked repository: true exactly for the commits stored whole', () => {
    const dir = makeRepo({ 'notes.txt': 'start\n' });
    dirs.push(dir);
    const message = `${'a long, very similar commit message line that invites deltas\n'.repeat(40)}`;
    for (let i = 0; i < 40; i++) {
      writeFileSync(join(dir, 'notes.txt'), `${readFileSync(join(dir, 'notes.txt'), 'utf8')}line ${i}\n`);
      git(dir, 'commit', '-qam', `${message}number ${i}\n`);
    }
    git(dir, 'tag', '-a', 'v1', '-m', 'annotated');
    git(dir, 'repack', '-q', '-a', '-d', '-f', '--depth=50', '--window=50');
    const contents = packContents(dir);
    const objects = join(dir, '.git', 'objects');
    const wrong: string[] = [];
    const seen = { whole: 0, delta: 0 };
    for (const [id, [type, delta]] of contents) {
      if (type === 'commit') seen[delta ? 'delta' : 'whole'] += 1;
      const expected = type === 'commit' && !delta;
      if (isCommitObject(objects, id) !== expected) wrong.push(`${id} ${type}${delta ? ' delta' : ''}`);
    }
    expect(wrong).toEqual([]);
    expect(seen.whole).toBeGreaterThan(0);
    expect(seen.delta).toBeGreaterThan(0); // the delta rule is exercised, not vacuous
    expect(contents.size).toBeGreaterThan(100);
  });

  it('a loose commit; an id that is nowhere; a pack that no longer matches its index', () => {
    const dir = makeRepo();
    dirs.push(dir);
    const objects = join(dir, '.git', 'objects');
    const loose = git(dir, 'rev-parse', 'HEAD');
    expect(isCommitObject(objects, loose)).toBe(true);
    expect(isCommitObject(objects, 'f'.repeat(40))).toBe(false);
    expect(isCommitObject(objects, git(dir, 'rev-parse', 'HEAD^{tree}'))).toBe(false);
    git(dir, 'gc', '-q');
    expect(isCommitObject(objects, loose)).toBe(true);
    const pack = readdirSync(join(objects, 'pack')).find((n) => n.endsWith('.pack')) as string;
    const bytes = readFileSync(join(objects, 'pack', pack));
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff; // the pack's checksum no longer matches the index
    writeFileSync(join(objects, 'pack', pack), bytes);
    expect(isCommitObject(objects, loose)).toBe(false);
  });
});
