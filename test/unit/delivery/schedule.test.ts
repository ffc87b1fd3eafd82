import { expect } from 'chai';
import fc from 'fast-check';
import { delayBefore, maxAttempts } from '../../../src/delivery/schedule.js';

// The retry schedule: attempt n waits the (n-1)th configured delay, ± 20 % so that deliveries
// that failed together do not come back together; as many attempts as delays.

const SEED_DELAYS = [0, 1000, 5000, 30000, 300000]; // the interface's schedule (WEBHOOK_RETRY_DELAYS_MS default)

/** A reproducible random source (mulberry32), so a failure here replays exactly. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('unit: retry schedule', () => {
  it('has as many attempts as delays, and no delay past the last one', () => {
    expect(maxAttempts(SEED_DELAYS)).to.equal(5);
    expect(delayBefore(SEED_DELAYS, 6, () => 0.5)).to.equal(undefined);
    expect(delayBefore(SEED_DELAYS, 0, () => 0.5)).to.equal(undefined);
  });

  it('waits exactly the configured delay at the middle of the jitter', () => {
    expect(SEED_DELAYS.map((_, i) => delayBefore(SEED_DELAYS, i + 1, () => 0.5))).to.deep.equal(SEED_DELAYS);
  });

  it('reaches 80 % and 120 % at the ends of the jitter', () => {
    expect(delayBefore(SEED_DELAYS, 2, () => 0)).to.equal(800);
    expect(delayBefore(SEED_DELAYS, 5, () => 0)).to.equal(240000);
    expect(delayBefore(SEED_DELAYS, 2, () => 1 - Number.EPSILON)).to.equal(1200);
    expect(delayBefore(SEED_DELAYS, 5, () => 1 - Number.EPSILON)).to.equal(360000);
  });

  it('stays within ± 20 % of every delay, for any random draw', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 86_400_000 }), { minLength: 1, maxLength: 10 }),
        fc.nat(),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (delays, pick, r) => {
          const attempt = (pick % delays.length) + 1;
          const base = delays[attempt - 1]!;
          const wait = delayBefore(delays, attempt, () => r)!;
          return Number.isInteger(wait) && wait >= Math.floor(base * 0.8) && wait <= Math.ceil(base * 1.2);
        },
      ),
      { seed: 1313, numRuns: 2000 },
    );
  });

  it('spreads deliveries that failed together across the window (seeded draws)', () => {
    const random = seeded(42);
    const waits = Array.from({ length: 1000 }, () => delayBefore(SEED_DELAYS, 4, random)!);
    expect(Math.min(...waits)).to.be.within(24000, 24600);
    expect(Math.max(...waits)).to.be.within(35400, 36000);
    expect(new Set(waits).size).to.be.greaterThan(900);
    const mean = waits.reduce((a, b) => a + b, 0) / waits.length;
    expect(mean).to.be.within(29500, 30500);
  });

  it('uses Math.random when given no source, inside the same bounds', () => {
    for (let i = 0; i < 200; i++) expect(delayBefore(SEED_DELAYS, 3)).to.be.within(4000, 6000);
  });
});
