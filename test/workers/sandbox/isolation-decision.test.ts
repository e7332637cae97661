import { describe, expect, it } from 'vitest';
import { decideIsolation } from '../../../src/workers/sandbox/isolation.js';

const found = () => ({ ok: true as const, path: '/usr/bin/bwrap', tmpfsSize: true });
const missing = () => ({ ok: false as const, reason: 'bwrap (Debian package bubblewrap) is not installed' });

describe('decideIsolation', () => {
  it('auto: bwrap where it works, else none with the reason', () => {
    expect(decideIsolation('auto', 'auto', 'egress', found).status).toEqual({
      kind: 'bwrap',
      reason: null,
      network: 'egress',
    });
    const none = decideIsolation('auto', 'auto', 'egress', missing);
    // Unisolated, the processes share the host's network: the receipt says host, not egress.
    expect(none.status).toMatchObject({
      kind: 'none',
      reason: expect.stringContaining('not installed'),
      network: 'host',
    });
    expect(none.use === null && none.refuse).toBeFalsy();
  });

  it('require (host) or required (mission) refuses when unavailable, with a hint', () => {
    for (const [mode, mission] of [
      ['require', 'auto'],
      ['auto', 'required'],
      ['off', 'required'],
    ] as const) {
      const d = decideIsolation(mode, mission, 'egress', missing);
      expect(d.use).toBeNull();
      expect(d.use === null && d.refuse?.hint).toMatch(/bubblewrap/);
    }
  });

  it('off never probes; network none without isolation refuses', () => {
    const d = decideIsolation('off', 'auto', 'egress', () => {
      throw new Error('probed');
    });
    expect(d.status).toMatchObject({ kind: 'none', reason: 'UH_ISOLATION=off' });
    for (const net of [
      decideIsolation('auto', 'auto', 'none', missing),
      decideIsolation('off', 'auto', 'none', missing),
    ]) {
      expect(net.use === null && net.refuse?.message).toMatch(/network: none/);
    }
  });
});

describe('decideIsolation: host policy first', () => {
  it("a mission's off never lowers require, and lowers auto only where the host allows it", () => {
    for (const allowed of [false, true]) {
      const d = decideIsolation('require', 'off', 'egress', found, allowed);
      expect(d.use).toBeNull();
      expect(d.use === null && d.refuse?.message).toBe(
        'sandbox.isolation: off is refused: this host requires isolation (UH_ISOLATION=require)',
      );
    }
    const unallowed = decideIsolation('auto', 'off', 'egress', found);
    expect(unallowed.use === null && unallowed.refuse?.message).toMatch(/UH_ALLOW_MISSION_ISOLATION_OFF is not set/);
    const allowed = decideIsolation('auto', 'off', 'egress', found, true);
    expect(allowed.use === null && !allowed.refuse && allowed.status.reason).toBe(
      'the mission sets sandbox.isolation: off',
    );
    expect(decideIsolation('off', 'off', 'egress', found).status).toMatchObject({ kind: 'none' });
  });
});
