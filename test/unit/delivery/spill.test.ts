import { expect } from 'chai';
import { spillThreshold, type SpillInput } from '../../../src/delivery/spill.js';

const base: SpillInput = {
  sharing: false,
  held: 0,
  maxHeld: 10_000,
  perWebhook: 32,
  parkAfterMs: 60_000,
  recentlyFinished: 0,
  headWaitedMs: 0,
};

describe('unit: when the stream spills a lane to the retry queue', () => {
  it('alone with memory to spare: never (the WAL is the queue)', () => {
    expect(spillThreshold({ ...base, held: 7_499, headWaitedMs: 59_000 })).to.equal(Number.POSITIVE_INFINITY);
  });

  it('alone, memory short, a lane catching up whose oldest delivery waited under a quarter of the bound: not spilled', () => {
    expect(spillThreshold({ ...base, held: 9_000, recentlyFinished: 0, headWaitedMs: 14_999 })).to.equal(Number.POSITIVE_INFINITY);
  });

  it('alone, memory short, a slow lane (oldest waited past a quarter of the bound): beyond 8 rounds of its in-flight cap', () => {
    expect(spillThreshold({ ...base, held: 7_500, headWaitedMs: 15_001 })).to.equal(256);
    expect(spillThreshold({ ...base, held: 7_500, headWaitedMs: 15_001, parkAfterMs: 4_000 })).to.equal(256);
    expect(spillThreshold({ ...base, held: 7_500, headWaitedMs: 999, parkAfterMs: 4_000 })).to.equal(Number.POSITIVE_INFINITY);
  });

  it('with other tailers: half a second of its recent rate, at least two rounds of its in-flight cap', () => {
    expect(spillThreshold({ ...base, sharing: true, recentlyFinished: 0 })).to.equal(64);
    expect(spillThreshold({ ...base, sharing: true, recentlyFinished: 1_000 })).to.equal(500);
    // Memory and waiting do not matter when others share the work.
    expect(spillThreshold({ ...base, sharing: true, recentlyFinished: 100, held: 0, headWaitedMs: 0 })).to.equal(64);
  });
});
