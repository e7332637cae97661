import { describe, expect, it } from 'vitest';
import { decideIsolation } from '../../../src/workers/sandbox/isolation.js';

const found = () => ({ ok: true as const, path: '/usr/bin/bwrap', tmpfsSize: true });
const missing = () => ({ ok: false as const, reason: 'bwrap (Debian package bubblewrap) is not installed' });

describe('decideIsolation', () => {
  it('auto: bwrap where it works, else none with the reason', () => {
    expect(decideIsolation('auto', 'auto', 'on', found).status).toEqual({ kind: 'bwrap', reason: null, network: 'on' });
    const none = decideIsolation('auto', 'auto', 'on', missing);
    expect(none.status).toMatchObject({ kind: 'none', reason: expect.stringContaining('not installed') });
    expect(none.use === null && none.refuse).toBeFalsy();
  });

  it('require (host) or required (mission) refuses when unavailable, with a hint', () => {
    for (const [mode, mission] of [['require', 'auto'], ['auto', 'required'], ['off', 'required']] as const) {
      const d = decideIsolation(mode, mission, 'on', missing);
      expect(d.use).toBeNull();
      expect(d.use === null && d.refuse?.hint).toMatch(/bubblewrap/);
    }
  });

  it('off never probes; network none without isolation refuses', () => {
    const d = decideIsolation('off', 'auto', 'on', () => {
      throw new Error('probed');
    });
    expect(d.status).toMatchObject({ kind: 'none', reason: 'UH_ISOLATION=off' });
    for (const net of [decideIsolation('auto', 'auto', 'none', missing), decideIsolation('off', 'auto', 'none', missing)]) {
      expect(net.use === null && net.refuse?.message).toMatch(/network: none/);
    }
  });
});
