/**
 * A successful bwrap probe is remembered across processes (a file in uh's cache) so a run spawns
 * no probe, yet a bwrap binary that changed, or an entry past its lifetime, is probed again.
 * (Each call uses its own PATH spelling: the in-process memo is per PATH, like a new process.)
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PROBE_TTL_MS, probeBwrap } from '../../../src/shared/process/bwrap-probe.js';
import { removeDir, tempDir } from '../../support/temp.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

/**
 * A fake `bwrap` on a PATH of its own that counts its runs, then runs `body`; `probe(now)` probes
 * as a new process would (a PATH spelling not seen before), against one cache file.
 */
function fakeBwrap(body: string) {
  const root = tempDir('uh-probe-');
  dirs.push(root);
  const bin = join(root, 'bin');
  mkdirSync(bin);
  const counter = join(root, 'count');
  writeFileSync(counter, '');
  const fake = join(bin, 'bwrap');
  const write = (text: string) => {
    // What a child without capabilities prints of /proc/self/status (the probe reads CapEff).
    const caps = text.includes('CapEff') ? '' : "printf 'CapEff:\\t0000000000000000\\n'\n";
    writeFileSync(fake, `#!/bin/sh\necho x >> ${counter}\n${caps}${text}`);
    chmodSync(fake, 0o755);
  };
  write(body);
  const cacheFile = join(root, 'bwrap-probe.json');
  let n = 0;
  return {
    fake,
    cacheFile,
    write,
    probes: () => readFileSync(counter, 'utf8').split('\n').filter(Boolean).length,
    probe: (now?: number) =>
      probeBwrap(`${bin}${':'.repeat(++n)}/usr/bin:/bin`, {
        cacheFile,
        ...(now === undefined ? {} : { now: () => now }),
      }),
  };
}

describe('probeBwrap across processes', () => {
  it('probes once, then trusts the stamp until bwrap changes or the stamp expires', () => {
    const b = fakeBwrap('exit 0\n');
    const t0 = 1_000_000;
    expect(b.probe(t0)).toEqual({ ok: true, path: b.fake, tmpfsSize: true });
    expect(b.probes()).toBe(1);
    expect(b.probe(t0 + 1000)).toEqual({ ok: true, path: b.fake, tmpfsSize: true });
    expect(b.probes()).toBe(1); // remembered: no process

    b.write('# upgraded\nexit 0\n'); // another binary: size and mtime differ
    expect(b.probe(t0 + 2000).ok).toBe(true);
    expect(b.probes()).toBe(2);

    expect(b.probe(t0 + 2000 + PROBE_TTL_MS).ok).toBe(true); // expired
    expect(b.probes()).toBe(3);

    b.write('exit 1\n'); // bwrap that cannot set up: never trusted from the stamp
    expect(b.probe(t0 + 2000 + PROBE_TTL_MS + 1).ok).toBe(false);
    expect(b.probe(t0 + 2000 + PROBE_TTL_MS + 2).ok).toBe(false);
    expect(b.probes()).toBe(5);
  });

  it('a bwrap without --size (before 0.7) still isolates, its tmpfs uncapped; remembered as such', () => {
    // bubblewrap 0.6's answer to an option it does not know.
    const b = fakeBwrap(
      'for a; do [ "$a" = --size ] && { echo "bwrap: Unknown option --size" >&2; exit 1; }; done\nexit 0\n',
    );
    expect(b.probe()).toEqual({ ok: true, path: b.fake, tmpfsSize: false });
    expect(JSON.parse(readFileSync(b.cacheFile, 'utf8'))).toMatchObject({ tmpfsSize: false });
    expect(b.probe()).toEqual({ ok: true, path: b.fake, tmpfsSize: false });
  });

  it('a stamp from before the size probe is not trusted: probed again', () => {
    const b = fakeBwrap('exit 0\n');
    expect(b.probe(5000).ok).toBe(true);
    const stamp = JSON.parse(readFileSync(b.cacheFile, 'utf8')) as Record<string, unknown>;
    delete stamp.tmpfsSize;
    writeFileSync(b.cacheFile, JSON.stringify(stamp));
    expect(b.probe(6000)).toEqual({ ok: true, path: b.fake, tmpfsSize: true });
    expect(b.probes()).toBe(2);
  });

  it('a sandbox that would keep a capability is no isolation (root without a user namespace)', () => {
    const b = fakeBwrap('');
    b.write('printf "CapEff:\\t000001ffffffffff\\n"; exit 0\n');
    const probe = b.probe();
    expect(probe.ok).toBe(false);
    expect(probe.ok ? '' : probe.reason).toContain('would keep capabilities (CapEff 000001ffffffffff)');
  });
});
