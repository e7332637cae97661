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

describe('probeBwrap across processes', () => {
  it('probes once, then trusts the stamp until bwrap changes or the stamp expires', () => {
    const root = tempDir('uh-probe-');
    dirs.push(root);
    const bin = join(root, 'bin');
    mkdirSync(bin);
    const counter = join(root, 'count');
    writeFileSync(counter, '');
    const fake = join(bin, 'bwrap');
    const script = (extra: string) => `#!/bin/sh\necho x >> ${counter}\n${extra}exit 0\n`;
    writeFileSync(fake, script(''));
    chmodSync(fake, 0o755);
    const cacheFile = join(root, 'bwrap-probe.json');
    const probes = () => readFileSync(counter, 'utf8').split('\n').filter(Boolean).length;
    let n = 0;
    const asNewProcess = (now: number) => probeBwrap(`${bin}${':'.repeat(++n)}/usr/bin:/bin`, { cacheFile, now: () => now });

    const t0 = 1_000_000;
    expect(asNewProcess(t0)).toEqual({ ok: true, path: fake, tmpfsSize: true });
    expect(probes()).toBe(1);
    expect(asNewProcess(t0 + 1000)).toEqual({ ok: true, path: fake, tmpfsSize: true });
    expect(probes()).toBe(1); // remembered: no process

    writeFileSync(fake, script('# upgraded\n')); // another binary: size and mtime differ
    expect(asNewProcess(t0 + 2000).ok).toBe(true);
    expect(probes()).toBe(2);

    expect(asNewProcess(t0 + 2000 + PROBE_TTL_MS).ok).toBe(true); // expired
    expect(probes()).toBe(3);

    writeFileSync(fake, script('exit 1\n')); // bwrap that cannot set up: never trusted from the stamp
    expect(asNewProcess(t0 + 2000 + PROBE_TTL_MS + 1).ok).toBe(false);
    expect(asNewProcess(t0 + 2000 + PROBE_TTL_MS + 2).ok).toBe(false);
    expect(probes()).toBe(5);
  });

  it('a bwrap without --size (before 0.7) still isolates, its tmpfs uncapped; remembered as such', () => {
    const root = tempDir('uh-probe-old-');
    dirs.push(root);
    const bin = join(root, 'bin');
    mkdirSync(bin);
    const fake = join(bin, 'bwrap');
    // bubblewrap 0.6's answer to an option it does not know.
    writeFileSync(fake, '#!/bin/sh\nfor a; do [ "$a" = --size ] && { echo "bwrap: Unknown option --size" >&2; exit 1; }; done\nexit 0\n');
    chmodSync(fake, 0o755);
    const cacheFile = join(root, 'bwrap-probe.json');
    expect(probeBwrap(`${bin}:/usr/bin:/bin`, { cacheFile })).toEqual({ ok: true, path: fake, tmpfsSize: false });
    expect(JSON.parse(readFileSync(cacheFile, 'utf8'))).toMatchObject({ tmpfsSize: false });
    expect(probeBwrap(`${bin}::/usr/bin:/bin`, { cacheFile })).toEqual({ ok: true, path: fake, tmpfsSize: false });
  });

  it('a stamp from before the size probe is not trusted: probed again', () => {
    const root = tempDir('uh-probe-stamp-');
    dirs.push(root);
    const bin = join(root, 'bin');
    mkdirSync(bin);
    const counter = join(root, 'count');
    writeFileSync(counter, '');
    const fake = join(bin, 'bwrap');
    writeFileSync(fake, `#!/bin/sh\necho x >> ${counter}\nexit 0\n`);
    chmodSync(fake, 0o755);
    const cacheFile = join(root, 'bwrap-probe.json');
    expect(probeBwrap(`${bin}:/usr/bin:/bin`, { cacheFile, now: () => 5000 }).ok).toBe(true);
    const stamp = JSON.parse(readFileSync(cacheFile, 'utf8')) as Record<string, unknown>;
    delete stamp.tmpfsSize;
    writeFileSync(cacheFile, JSON.stringify(stamp));
    expect(probeBwrap(`${bin}::/usr/bin:/bin`, { cacheFile, now: () => 6000 })).toEqual({ ok: true, path: fake, tmpfsSize: true });
    expect(readFileSync(counter, 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
  });
});
