import { describe, expect, it } from 'vitest';
import { AcpEarlyUpdates } from '../../../../src/workers/runtimes/acp/acp-early-updates.js';

describe('AcpEarlyUpdates', () => {
  it('holds updates per session in order until a run takes them', () => {
    const early = new AcpEarlyUpdates();
    expect(early.hold('s1', 'a')).toBe(true);
    expect(early.hold('s2', 'x')).toBe(true);
    expect(early.hold('s1', 'b')).toBe(true);
    expect(early.take('s1')).toEqual(['a', 'b']);
    expect(early.take('s1')).toEqual([]);
    expect(early.take('s2')).toEqual(['x']);
  });

  it('refuses past its bound (the caller reports the update) and frees room on take', () => {
    const early = new AcpEarlyUpdates(2);
    expect([early.hold('s', 1), early.hold('s', 2), early.hold('s', 3)]).toEqual([true, true, false]);
    early.take('s');
    expect(early.hold('s', 4)).toBe(true);
  });

  it('drops updates for a retired session until it is attached again', () => {
    const early = new AcpEarlyUpdates(1);
    early.retire('old');
    expect(early.hold('old', 'late usage_update')).toBe(true);
    expect(early.hold('old', 'another')).toBe(true); // dropped, so the bound is not used up
    expect(early.take('old')).toEqual([]);
    expect(early.hold('old', 'live again')).toBe(true);
    expect(early.take('old')).toEqual(['live again']);
  });
});
