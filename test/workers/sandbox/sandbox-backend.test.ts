import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { whichOnPath } from '../../../src/shared/process/bwrap-probe.js';
import { OVERLAY_PROBE_TTL_MS, overlayProbeFor } from '../../../src/workers/sandbox/sandbox-backend.js';
import { tempDir } from '../../support/temp.js';

/**
 * A remembered overlay probe (`<cache>/overlay-probe.json`) stands only for the host it was made
 * on, for an hour. Each case probes with no `unshare` on PATH, so a probe that runs fails: an
 * answer of ok is the memo's.
 */
describe('the remembered overlay probe', () => {
  const unshare = whichOnPath('unshare', process.env.PATH) as string;

  /** A memo as a success on this host writes it, made at `at`, with `identity` changed by `edit`. */
  function memo(at: number, edit: (identity: string) => string = (i) => i): string {
    const cacheDir = tempDir('uh-overlay-memo-');
    const made = tempDir('uh-overlay-memo-made-');
    // A real success writes the identity of this host; take it from one (real unshare on PATH).
    const probe = overlayProbeFor(made, process.env.PATH, at);
    expect(probe.ok, 'this host mounts overlays in a user namespace').toBe(true);
    const written = JSON.parse(readFileSync(join(made, 'overlay-probe.json'), 'utf8'));
    writeFileSync(
      join(cacheDir, 'overlay-probe.json'),
      JSON.stringify({ ...written, identity: edit(written.identity) }),
    );
    return cacheDir;
  }

  it('is used within the hour on the same host', () => {
    const now = Date.now();
    expect(overlayProbeFor(memo(now - 1000), '/nonexistent-bin', now)).toEqual({ ok: true, unshare });
  });

  it('is not used once an hour old, nor for another uid or user-namespace setting, nor from a clock gone back', () => {
    const now = Date.now();
    expect(overlayProbeFor(memo(now - OVERLAY_PROBE_TTL_MS), '/nonexistent-bin', now).ok).toBe(false);
    const otherUid = memo(now, (i) => i.replace(/uid=\d+/, 'uid=4242'));
    expect(overlayProbeFor(otherUid, '/nonexistent-bin', now).ok).toBe(false);
    const userns = memo(now, (i) => `${i.slice(0, i.lastIndexOf(' '))} 0,0,1`);
    expect(overlayProbeFor(userns, '/nonexistent-bin', now).ok).toBe(false);
    expect(overlayProbeFor(memo(now + 60_000), '/nonexistent-bin', now).ok).toBe(false);
  });
});
