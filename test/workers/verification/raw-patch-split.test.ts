/** Names and patch from one `git diff-tree --patch-with-raw -z`: split byte-exact, whatever the chunking. */
import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { RawPatchSplit } from '../../../src/workers/verification/raw-patch-split.js';

const raw = [
  ':100644 100644 aaa bbb M',
  'f2',
  ':100644 100644 ccc ccc R100',
  'f1',
  'g1',
  ':000000 100644 000 ddd A',
  'sp ace',
  '',
].join('\0');
const patch = 'diff --git a/f2 b/f2\n--- a/f2\n+++ b/f2\n@@ -1 +1,2 @@\n x\n+y\0binary-ish\n';

async function split(chunkSize: number, text: string) {
  const bytes = Buffer.from(text);
  const chunks = Array.from({ length: Math.ceil(bytes.length / chunkSize) }, (_, i) =>
    bytes.subarray(i * chunkSize, (i + 1) * chunkSize),
  );
  const out: Buffer[] = [];
  const s = new RawPatchSplit();
  await pipeline(Readable.from(chunks), s, new Writable({ write: (c: Buffer, _e, done) => (out.push(c), done()) }));
  return { s, patch: Buffer.concat(out).toString() };
}

describe('RawPatchSplit', () => {
  it.each([1, 3, 7, 64, 4096])('chunks of %i bytes', async (size) => {
    const { s, patch: written } = await split(size, `${raw}\0${patch}`);
    expect(written).toBe(patch);
    expect(s.bytes).toBe(Buffer.byteLength(patch));
    expect(s.digest()).toBe(`sha256:${createHash('sha256').update(patch).digest('hex')}`);
    expect(s.changed()).toEqual([
      { path: 'f2', status: 'modified' },
      { path: 'g1', status: 'renamed', from: 'f1' },
      { path: 'sp ace', status: 'added' },
    ]);
  });

  it('no output: no names, an empty patch', async () => {
    const { s, patch: written } = await split(16, '');
    expect(written).toBe('');
    expect(s.changed()).toEqual([]);
  });
});
