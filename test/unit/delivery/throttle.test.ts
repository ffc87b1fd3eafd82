import { expect } from 'chai';
import { claimAhead, Throttle } from '../../../src/delivery/throttle.js';

// The throttle's bucket: `burst` turns at once, then one every 1/perSecond seconds; a wait is
// counted once until a turn is taken; no limit, no wait.

describe('unit: the throttle', () => {
  it('takes `burst` turns at once, then says how long until the next', () => {
    let waits = 0;
    const t = new Throttle(() => waits++);
    const limit = { perSecond: 10, burst: 2 };
    expect(t.take('wh', limit, 0)).to.equal(0);
    expect(t.take('wh', limit, 0)).to.equal(0);
    expect(t.take('wh', limit, 0)).to.equal(100);
    expect(t.take('wh', limit, 50)).to.equal(50);
    expect(waits, 'one wait, however often asked').to.equal(1);
    expect(t.take('wh', limit, 100)).to.equal(0);
    expect(t.take('wh', limit, 100)).to.equal(100);
    expect(waits).to.equal(2);
  });

  it('refills at perSecond up to burst, never beyond', () => {
    const t = new Throttle();
    const limit = { perSecond: 20, burst: 1 };
    expect(t.take('wh', limit, 0)).to.equal(0);
    // A long quiet spell still leaves one turn, not sixty.
    expect(t.take('wh', limit, 3000)).to.equal(0);
    expect(t.take('wh', limit, 3000)).to.equal(50);
  });

  it('keeps one bucket per subscription; a changed limit starts afresh; no limit never waits', () => {
    const t = new Throttle();
    expect(t.take('a', { perSecond: 1, burst: 1 }, 0)).to.equal(0);
    expect(t.take('b', { perSecond: 1, burst: 1 }, 0)).to.equal(0);
    expect(t.take('a', { perSecond: 1, burst: 1 }, 0)).to.equal(1000);
    expect(t.take('a', { perSecond: 2, burst: 1 }, 0)).to.equal(0);
    for (let i = 0; i < 100; i++) expect(t.take('c', null, 0)).to.equal(0);
  });

  it('tallies each ended wait and its length per subscription and minute, once per drain', () => {
    let wall = 60_000 * 10 + 59_900;
    const t = new Throttle(undefined, () => wall);
    const limit = { perSecond: 10, burst: 1 };
    t.take('a', limit, 0);
    expect(t.take('a', limit, 20)).to.equal(80);
    expect(t.take('a', limit, 60)).to.equal(40);
    expect(t.drainWaits(), 'a wait not ended yet is not tallied').to.deep.equal([]);
    expect(t.take('a', limit, 100)).to.equal(0); // waited from 20 to 100
    t.take('b', limit, 0);
    t.take('b', limit, 50);
    wall += 200; // the next minute
    expect(t.take('b', limit, 150)).to.equal(0); // waited from 50 to 150
    expect(t.take('a', limit, 150)).to.equal(50);
    expect(t.take('a', limit, 200)).to.equal(0); // waited from 150 to 200
    expect(t.drainWaits()).to.deep.equal([
      { webhookId: 'a', minute: 600_000, waits: 1, waitedMs: 80 },
      { webhookId: 'b', minute: 660_000, waits: 1, waitedMs: 100 },
      { webhookId: 'a', minute: 660_000, waits: 1, waitedMs: 50 },
    ]);
    expect(t.drainWaits(), 'drained: the tally starts afresh').to.deep.equal([]);
  });

  it('a worker claims about 5 s of turns ahead; unthrottled, no bound', () => {
    expect(claimAhead({ perSecond: 20, burst: 1 })).to.equal(100);
    expect(claimAhead({ perSecond: 0.01, burst: 1 })).to.equal(1);
    expect(claimAhead(null)).to.equal(Number.POSITIVE_INFINITY);
  });
});
