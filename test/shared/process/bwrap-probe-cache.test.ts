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
    expect(asNewProcess(t0)).toEqual({ ok: true, path: fake });
    expect(probes()).toBe(1);
    expect(asNewProcess(t0 + 1000)).toEqual({ ok: true, path: fake });
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
});
