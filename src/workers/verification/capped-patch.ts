/**
 * `diff.patch` under the host's size cap (`UH_DIFF_CAP_BYTES`, default 50 MiB): the first
 * `capBytes` of the patch, then, when more was printed, one marker line naming what was kept and
 * the total. Never silently partial: the capture reports `truncated` and the total, the receipt
 * records them (`diff.truncated`, `diff.bytes_total`), and promotion refuses a truncated diff
 * (src/promotion/promotion-policy.ts). The names of the change are not capped with it: they come
 * from git's raw records, before the patch, so the scope check always sees every path.
 *
 * Memory stays flat: chunks go straight to the file; past the cap they are only counted. The
 * digest covers the file as written (kept bytes and marker), so it still proves the artifact.
 */
import { CappedFile, type CappedFacts } from './capped-file.js';
import { Writable } from 'node:stream';

export const PATCH_TRUNCATION_MARKER = (kept: number, total: number) =>
  `\n[… uh truncated this diff at UH_DIFF_CAP_BYTES: kept the first ${kept} of ${total} bytes; the receipt says diff.truncated …]\n`;

/** What was written: `bytes` and `digest` of the file; `bytesTotal` of the whole patch. */
export type PatchFacts = CappedFacts;

/** The patch file under its cap: a `CappedFile` whose marker names `UH_DIFF_CAP_BYTES`. */
export class CappedPatchFile extends CappedFile {
  constructor(path: string, capBytes: number) {
    super(path, capBytes, PATCH_TRUNCATION_MARKER);
  }
}

/** A stream's end into a capped patch file; `facts` resolves once the stream finished. */
export function cappedPatchStream(file: CappedPatchFile): { stream: Writable; facts: () => PatchFacts } {
  let facts: PatchFacts | null = null;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        file.write(chunk);
        done();
      } catch (error) {
        done(error as Error);
      }
    },
    final(done) {
      try {
        facts = file.close();
        done();
      } catch (error) {
        done(error as Error);
      }
    },
    destroy(error, done) {
      file.release();
      done(error);
    },
  });
  return {
    stream,
    facts: () => {
      if (facts === null) throw new Error('the patch is not finished');
      return facts;
    },
  };
}

/** A patch made in process, written under the same cap. */
export function writeCappedPatch(path: string, patch: Buffer, capBytes: number): PatchFacts {
  const file = new CappedPatchFile(path, capBytes);
  file.write(patch);
  return file.close();
}
