/**
 * `diff.patch` under `UH_DIFF_CAP_BYTES` (`capped-patch.ts`): the first cap bytes and a marker,
 * whatever the chunking, with the facts the receipt records (bytes and digest of the file as
 * written, the total, `truncated`); and the diff capture under a small cap, on every path that
 * writes a patch (git's `diff-tree`, with both git paths, and the in-process patch of new files):
 * cut and flagged, the names complete, a patch under the cap untouched.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { GIT_PROCESSES, IN_PROCESS_GIT } from '../../../src/workers/git-path.js';
import { captureDiff } from '../../../src/workers/verification/capture-diff.js';
import {
  CappedPatchFile,
  cappedPatchStream,
  PATCH_TRUNCATION_MARKER,
  writeCappedPatch,
} from '../../../src/workers/verification/capped-patch.js';
import { freshSandbox } from '../../support/sandbox.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const body = Buffer.from(Array.from({ length: 300 }, (_, i) => `+line ${i}\n`).join(''));

describe('CappedPatchFile', () => {
  const scratch = tempDir('uh-capped-');
  dirs.push(scratch);

  it.each([
    [1, 100],
    [7, 100],
    [4096, 100],
    [64, body.length],
    [64, body.length + 1],
    [1, 1],
  ])('chunks of %i bytes, cap %i', async (chunk, cap) => {
    const path = join(scratch, `p-${chunk}-${cap}`);
    const file = cappedPatchStream(new CappedPatchFile(path, cap));
    const chunks = Array.from({ length: Math.ceil(body.length / chunk) }, (_, i) =>
      body.subarray(i * chunk, (i + 1) * chunk),
    );
    await pipeline(Readable.from(chunks), file.stream);
    const written = readFileSync(path);
    const truncated = body.length > cap;
    const expected = truncated
      ? Buffer.concat([body.subarray(0, cap), Buffer.from(PATCH_TRUNCATION_MARKER(cap, body.length))])
      : body;
    expect(written.equals(expected)).toBe(true);
    expect(file.facts()).toEqual({ bytes: written.length, digest: sha(written), truncated, bytesTotal: body.length });
    expect(writeCappedPatch(`${path}-whole`, body, cap)).toEqual(file.facts());
  });
});

describe('captureDiff under a small cap', () => {
  it.each([
    ['git processes, diff-tree', GIT_PROCESSES],
    ['in process first: the patch of new files written in process', IN_PROCESS_GIT],
  ])('%s: cut and flagged, every name kept; under the cap, the same patch', async (_name, path) => {
    const { sandbox, commit, scratch, patch } = await freshSandbox(
      { 'README.md': '# one\n' },
      `op-capped-${dirs.length}`,
      dirs,
    );
    writeFileSync(join(sandbox.path, 'big.txt'), body);
    writeFileSync(join(sandbox.path, 'small.txt'), 'small\n');
    const whole = await captureDiff(sandbox.path, commit, patch, scratch, { git: path });
    const full = readFileSync(patch);
    expect(whole).toMatchObject({ truncated: false, bytes: full.length, bytesTotal: full.length, digest: sha(full) });
    const cap = 1000;
    const cut = await captureDiff(sandbox.path, commit, patch, scratch, { git: path, capBytes: cap });
    const written = readFileSync(patch);
    expect(cut).toMatchObject({ truncated: true, capBytes: cap, bytesTotal: full.length, bytes: written.length });
    expect(cut.digest).toBe(sha(written));
    expect(written.subarray(0, cap).equals(full.subarray(0, cap))).toBe(true);
    expect(written.subarray(cap).toString()).toBe(PATCH_TRUNCATION_MARKER(cap, full.length));
    expect(cut.changed).toEqual(whole.changed);
    expect(cut.changed.map((c) => c.path)).toEqual(['big.txt', 'small.txt']);
    expect(cut.tree).toBe(whole.tree);
  });
});
